"""Memory statistics, the caching allocator seen from Python, out of memory."""
import pytest
import torch

from conftest import run_python


def test_statistics_move_with_allocations():
    torch.kiln.synchronize()
    torch.kiln.empty_cache()
    torch.kiln.reset_peak_memory_stats()
    before = torch.kiln.memory_allocated()
    tensor = torch.empty(1024 * 1024, device="kiln")          # 4 MiB, large pool
    assert torch.kiln.memory_allocated() == before + 4 * 1024 * 1024
    assert torch.kiln.memory_reserved() >= torch.kiln.memory_allocated()
    assert torch.kiln.max_memory_allocated() >= before + 4 * 1024 * 1024
    stats = torch.kiln.memory_stats()
    assert stats["allocation.all.current"] >= 1
    assert stats["allocated_bytes.large_pool.current"] >= 4 * 1024 * 1024
    del tensor
    assert torch.kiln.memory_allocated() == before
    assert torch.kiln.max_memory_allocated() >= before + 4 * 1024 * 1024
    assert torch.kiln.memory_reserved() > 0               # cached, not returned
    torch.kiln.empty_cache()
    assert torch.kiln.memory_reserved() == torch.kiln.memory_stats()["reserved_bytes.all.current"]
    torch.kiln.reset_peak_memory_stats()
    assert torch.kiln.max_memory_allocated() == torch.kiln.memory_allocated()


def test_freed_memory_is_reused():
    first = torch.empty(1000, device="kiln")
    pointer = first.data_ptr()
    del first
    assert torch.empty(1000, device="kiln").data_ptr() == pointer


def test_torch_accelerator_memory_api():
    tensor = torch.empty(256, device="kiln")
    assert torch.accelerator.memory_allocated(0) == torch.kiln.memory_allocated(0)
    free, total = torch.accelerator.get_memory_info(0)
    assert 0 <= free <= total == torch.kiln.get_device_properties(0).total_memory
    assert torch.kiln.mem_get_info(0) == (free, total)
    del tensor


def test_memory_summary_lists_the_statistics():
    summary = torch.kiln.memory_summary()
    assert "Allocated memory" in summary and "Reserved memory" in summary


def test_out_of_memory_is_raised_and_the_device_recovers():
    result = run_python("""
        import torch
        keep = [torch.empty(8 * 1024 * 1024, device="kiln") for _ in range(1)]   # 32 MiB
        try:
            torch.empty(16 * 1024 * 1024, device="kiln")                         # 64 MiB more
        except torch.OutOfMemoryError as error:
            message = str(error)
            assert "Tried to allocate 64.00 MiB" in message, message
            assert "kiln:0 has a total capacity of 64.00 MiB" in message, message
        else:
            raise AssertionError("expected torch.OutOfMemoryError")
        stats = torch.kiln.memory_stats()
        assert stats["num_ooms"] == 1
        del keep
        big = torch.ones(12 * 1024 * 1024, device="kiln")                       # 48 MiB fits now
        assert big.sum().item() == 12 * 1024 * 1024
        print("ok")
    """, KILN_DEVICE_MEMORY="64MiB")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_cache_is_freed_before_declaring_out_of_memory():
    result = run_python("""
        import torch
        for size in (6, 5, 7):                 # cached segments of different sizes
            torch.empty(size * 1024 * 1024, device="kiln")
        tensor = torch.empty(14 * 1024 * 1024, device="kiln")    # needs the cache released
        print(torch.kiln.memory_stats()["num_alloc_retries"] >= 1)
    """, KILN_DEVICE_MEMORY="64MiB")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_pinned_host_memory():
    torch.kiln.empty_host_cache()
    before = torch.kiln.host_memory_stats()
    host = torch.empty(4096).pin_memory()                 # 16 KiB
    assert host.is_pinned()
    assert not torch.empty(16).is_pinned()
    assert torch.empty(16, pin_memory=True).is_pinned()
    during = torch.kiln.host_memory_stats()
    assert during["allocated_bytes"] >= before["allocated_bytes"] + 16384
    del host
    assert torch.kiln.host_memory_stats()["allocated_bytes"] < during["allocated_bytes"]
    torch.kiln.empty_host_cache()
    assert torch.kiln.host_memory_stats()["reserved_bytes"] <= during["reserved_bytes"] - 16384
