"""torch.compile(model, backend="kiln"): the compiled path (docs/compiled_path.md)."""
from . import fake_convolution
from .backend import DynamicShapesError, UnsupportedOperatorError, kiln
from .statistics import compile_stats, reset_compile_stats


def register():
    """Makes backend="kiln" known to torch.compile when torch._dynamo is
    loaded. torch.compile also finds it through the torch_dynamo_backends
    entry point (pyproject.toml); this covers an install without metadata.
    Importing torch._dynamo here would slow every `import torch`, so this
    registers only when Dynamo is already loaded. Traced convolutions on
    kiln take the layouts Kiln's kernels give (fake_convolution.py)."""
    import sys
    fake_convolution.install()
    if "torch._dynamo" in sys.modules:
        from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend
        if "kiln" not in _COMPILER_FNS:
            register_backend(name="kiln")(kiln)


__all__ = ["DynamicShapesError", "UnsupportedOperatorError", "compile_stats", "kiln", "register",
           "reset_compile_stats"]
