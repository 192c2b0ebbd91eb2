"""Kiln: a native PyTorch device backend. ``import torch`` loads it (see
``_autoload``); the device is ``"kiln"`` and its module is ``torch.kiln``.

Op tracking:
    get_executed_ops()  every ATen op that ran on the device, by path
    get_fallback_ops()  the ops that ran on the CPU through the fallback
    clear_op_tracking()

torch.compile(model, backend="kiln"):
    compile_stats()     graphs, nodes, kernels, compile seconds, recompiles (docs/design/compiled_path.md)
    reset_compile_stats()

Evaluation (kiln-eval, docs/guides/evaluation.md):
    evaluate(model, make_batch, loss=None, ...)  CPU eager against kiln eager and
                        compiled: fallbacks, numerics, time, recompiles, memory

Kernel compiler and its cache (kernel_cache.py):
    compiler_stats()    compiles, cache hits and compile time (docs/design/kernel_cache.md)
    reset_compiler_stats()

Adaptive eager (adaptive_eager.py, docs/design/adaptive_eager.md):
    adaptive_eager_stats()   pointwise ops held and fused, kernels compiled, stores skipped
    reset_adaptive_eager_stats()
    set_adaptive_eager(mode), adaptive_eager_mode()

``import torch`` loads only what the device needs (its registration,
torch.kiln, op tracking, the distributed backend); torch_kiln.compile (and
with it torch._dynamo), torch_kiln.eval and torch_kiln.bucketing load when
first used.
"""
import atexit
import os
import sys

if "torch" not in sys.modules:
    # Importing torch runs the backend autoload, which would import this
    # package again while it is half-initialized: keep it off for that import.
    _previous_autoload = os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD")
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    try:
        import torch
    finally:
        if _previous_autoload is None:
            del os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"]
        else:
            os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = _previous_autoload

import torch

from . import _C
from . import fake_convolution as _fake_convolution
from ._registration import register as _register
from .distributed import register as _register_distributed_backend
from .adaptive_eager import adaptive_eager_mode, adaptive_eager_stats
from .adaptive_eager import reset_adaptive_eager_stats, set_adaptive_eager
from .kernel_cache import compiler_stats, reset_compiler_stats
from .op_tracking import clear_op_tracking, get_executed_ops, get_fallback_ops
from .op_tracking import get_fallback_mode, set_fallback_mode

# What `import torch` does not load (tests/python/test_import_time.py): the
# compiled path, which needs torch._dynamo, and kiln-eval with its reports
# load when first named (PEP 562), e.g. torch_kiln.compile_stats() or
# torch_kiln.evaluate(...). torch.compile(backend="kiln") imports
# torch_kiln.compile itself, through the torch_dynamo_backends entry point.
# name -> (submodule, attribute of it, or None for the submodule itself)
_LAZY = {
    "bucketing": ("bucketing", None),
    "compile": ("compile", None),
    "compile_stats": ("compile", "compile_stats"),
    "eval": ("eval", None),
    "evaluate": ("eval", "evaluate"),
    "reset_compile_stats": ("compile", "reset_compile_stats"),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(f"{__name__}.{module_name}")
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "adaptive_eager_mode",
    "adaptive_eager_stats",
    "bucketing",
    "clear_op_tracking",
    "compile_stats",
    "compiler_stats",
    "evaluate",
    "get_executed_ops",
    "get_fallback_mode",
    "get_fallback_ops",
    "reset_adaptive_eager_stats",
    "reset_compile_stats",
    "reset_compiler_stats",
    "set_adaptive_eager",
    "set_fallback_mode",
]


def _autoload():
    """Entry point of the ``torch.backends`` group: called by ``import torch``,
    after this package's import has registered the device."""
    _register()


def _register_compile_backend():
    """backend="kiln" for torch.compile when Dynamo is already loaded and its
    entry point may be unknown (torch_kiln.compile.register); never imports
    Dynamo or the compiled path otherwise."""
    if "torch._dynamo" in sys.modules:
        from .compile import register
        register()


_register()
# Traced convolutions on kiln take the layouts Kiln's kernels give, in every
# fake-tensor trace (torch.compile with any backend, torch.export).
_fake_convolution.install()
_register_compile_backend()
_register_distributed_backend()
# Finish queued device work while Python can still run the destructors it
# triggers (see _C._drain_streams).
atexit.register(_C._drain_streams)
