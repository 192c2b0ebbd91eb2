"""Kiln: a native PyTorch device backend. ``import torch`` loads it (see
``_autoload``); the device is ``"kiln"`` and its module is ``torch.kiln``.

Op tracking:
    get_executed_ops()  every ATen op that ran on the device, by path
    get_fallback_ops()  the ops that ran on the CPU through the fallback
    clear_op_tracking()

torch.compile(model, backend="kiln"):
    compile_stats()     graphs, nodes, kernels, compile seconds, recompiles (docs/compiled_path.md)
    reset_compile_stats()

Evaluation (kiln-eval, docs/evaluation.md):
    evaluate(model, make_batch, loss=None, ...)  CPU eager against kiln eager and
                        compiled: fallbacks, numerics, time, recompiles, memory

Kernel compiler and its cache (kernel_cache.py):
    compiler_stats()    compiles, cache hits and compile time (docs/kernel_cache.md)
    reset_compiler_stats()
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
from .kernel_cache import compiler_stats, reset_compiler_stats
from . import bucketing
from .compile import compile_stats, reset_compile_stats
from .compile import register as _register_compile_backend
from .distributed import register as _register_distributed_backend
from .eval import evaluate
from .op_tracking import clear_op_tracking, get_executed_ops, get_fallback_ops
from .op_tracking import get_fallback_mode, set_fallback_mode

__all__ = [
    "bucketing",
    "clear_op_tracking",
    "compile_stats",
    "compiler_stats",
    "evaluate",
    "get_executed_ops",
    "get_fallback_mode",
    "get_fallback_ops",
    "reset_compile_stats",
    "reset_compiler_stats",
    "set_fallback_mode",
]


def _autoload():
    """Entry point of the ``torch.backends`` group: called by ``import torch``."""
    _register()


_register()
# Traced convolutions on kiln take the layouts Kiln's kernels give, in every
# fake-tensor trace (torch.compile with any backend, torch.export).
_fake_convolution.install()
_register_compile_backend()
_register_distributed_backend()
# Finish queued device work while Python can still run the destructors it
# triggers (see _C._drain_streams).
atexit.register(_C._drain_streams)
