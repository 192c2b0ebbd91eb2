"""`import torch` loads the kiln device and nothing heavier (issue 31): the
compiled path (torch_kiln.compile, which needs torch._dynamo) and kiln-eval
load on first use, and torch.compile(backend="kiln") still finds the backend
in a fresh process through the torch_dynamo_backends entry point. How long
the import takes is measured by bench/bench_import.py, not asserted here."""
import json
import textwrap

from conftest import run_python

LAZY = ("torch._dynamo", "torch_kiln.compile", "torch_kiln.eval", "torch_kiln.bucketing")


def _last_json(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_torch_loads_the_device_but_not_the_compiled_path():
    result = run_python(f"""
        import json, sys
        import torch
        loaded = [name for name in {LAZY!r} if name in sys.modules]
        x = torch.empty(2, device="kiln").fill_(3)
        print(json.dumps({{
            "loaded": loaded,
            "device": str(x.device),
            "values": x.cpu().tolist(),
            "accelerator": str(torch.accelerator.current_accelerator()),
            "torch_kiln_module": torch.kiln.__name__,
            "distributed": torch.distributed.is_backend_available("kiln"),
            "still_lazy": [name for name in {LAZY!r} if name in sys.modules],
        }}))
    """, TORCH_DEVICE_BACKEND_AUTOLOAD=1)
    report = _last_json(result)
    assert report["loaded"] == []
    assert report["device"] == "kiln:0"
    assert report["values"] == [3.0, 3.0]
    assert report["accelerator"] == "kiln"
    assert report["torch_kiln_module"] == "torch_kiln.device"
    assert report["distributed"] is True
    assert report["still_lazy"] == []  # running eager ops on the device loads none of it either


def test_public_names_load_their_modules_on_first_use():
    result = run_python(f"""
        import json, sys
        import torch, torch_kiln
        stats = torch_kiln.compile_stats()
        after_stats = [name for name in {LAZY!r} if name in sys.modules]
        torch_kiln.reset_compile_stats()
        bucketing = torch_kiln.bucketing.__name__
        evaluate = torch_kiln.evaluate.__module__
        print(json.dumps({{
            "graphs": stats["graphs"],
            "after_stats": after_stats,
            "bucketing": bucketing,
            "evaluate": evaluate,
            "compiler_stats": sorted(torch_kiln.compiler_stats()),
            "backend": torch_kiln.compile.kiln.__module__,
            "all": all(hasattr(torch_kiln, name) for name in torch_kiln.__all__),
            "loaded": [name for name in {LAZY!r} if name in sys.modules],
        }}))
    """, TORCH_DEVICE_BACKEND_AUTOLOAD=1)
    report = _last_json(result)
    assert report["graphs"] == 0
    # compile_stats() needs the compiled path's counters, not Dynamo.
    assert report["after_stats"] == ["torch_kiln.compile"]
    assert report["bucketing"] == "torch_kiln.bucketing"
    assert report["evaluate"] == "torch_kiln.eval.evaluate"
    assert "kernels_compiled" in report["compiler_stats"]
    assert report["backend"] == "torch_kiln.compile.backend"
    assert report["all"] is True
    assert report["loaded"] == list(LAZY)


# Compiles and checks a function against the CPU; the prelude before it
# imports torch and sets `before`, what it saw before compiling.
_COMPILE = """
    def function(x, y):
        return torch.relu(x * y + 1).sum(1)

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    compiled = torch.compile(function, backend="kiln")
    result = compiled(x.to("kiln"), y.to("kiln"))
    torch.testing.assert_close(result.cpu(), function(x, y))
    from importlib.metadata import EntryPoint
    from torch._dynamo.backends.registry import _BACKENDS, _COMPILER_FNS
    import torch_kiln.compile.backend
    print(json.dumps({
        **before,
        "entry_point": isinstance(_BACKENDS["kiln"], EntryPoint),
        "registered": _COMPILER_FNS["kiln"] is torch_kiln.compile.backend.kiln,
        "graphs": torch_kiln.compile_stats()["graphs"],
    }))
"""
COMPILED = {"entry_point": True, "registered": True, "graphs": 1}


def _compile_after(prelude, **environment):
    return _last_json(run_python(textwrap.dedent(prelude) + textwrap.dedent(_COMPILE), **environment))


def test_torch_compile_finds_the_backend_in_a_fresh_process():
    report = _compile_after("""
        import json, sys
        import torch
        before = {"kiln_compile": "torch_kiln.compile" in sys.modules}
    """, TORCH_DEVICE_BACKEND_AUTOLOAD=1)
    assert report == {"kiln_compile": False, **COMPILED}


def test_torch_compile_loads_kiln_through_the_entry_point_without_autoload():
    """Dynamo's entry-point lookup imports torch_kiln, which registers the
    device; it must not register the backend a second time (Dynamo would
    refuse the duplicate name)."""
    report = _compile_after("""
        import json, sys
        import torch
        before = {"torch_kiln": "torch_kiln" in sys.modules}
        torch.compile(lambda x: x, backend="kiln")  # looks the backend up: imports torch_kiln
        before["device"] = torch._C._get_privateuse1_backend_name()
    """, TORCH_DEVICE_BACKEND_AUTOLOAD=0)
    assert report == {"torch_kiln": False, "device": "kiln", **COMPILED}


def test_import_torch_kiln_after_dynamo_registers_the_backend():
    """With Dynamo loaded first, `import torch_kiln` registers backend="kiln"
    itself (for an install whose entry points Dynamo cannot see), and Dynamo's
    later entry-point discovery keeps that registration."""
    report = _compile_after("""
        import json, sys
        import torch, torch._dynamo
        from torch._dynamo.backends.registry import _COMPILER_FNS
        import torch_kiln
        before = {"registered_at_import": "kiln" in _COMPILER_FNS}
    """, TORCH_DEVICE_BACKEND_AUTOLOAD=0)
    assert report == {"registered_at_import": True, **COMPILED}
