"""torch_kiln.compiler_stats(): the kernel cache's counters, seen from Python."""
import torch_kiln

INTEGER_KEYS = {"kernels_compiled", "memory_hits", "disk_hits", "compile_failures",
                "disk_evictions", "stale_files_removed"}


def test_compiler_stats_has_the_documented_keys_and_types():
    stats = torch_kiln.compiler_stats()
    assert set(stats) == INTEGER_KEYS | {"compile_seconds"}
    for key in INTEGER_KEYS:
        assert type(stats[key]) is int and stats[key] >= 0, key
    assert type(stats["compile_seconds"]) is float and stats["compile_seconds"] >= 0.0


def test_reset_compiler_stats_zeroes_every_counter():
    torch_kiln.reset_compiler_stats()
    stats = torch_kiln.compiler_stats()
    assert all(stats[key] == 0 for key in INTEGER_KEYS)
    assert stats["compile_seconds"] == 0.0


def test_compiler_stats_is_a_fresh_dict_each_call():
    first = torch_kiln.compiler_stats()
    first["kernels_compiled"] = 12345
    assert torch_kiln.compiler_stats()["kernels_compiled"] != 12345
