"""torch.compile(model, backend="kiln"): the compiled path (docs/compiled_path.md).

backend.py is the entry: Dynamo calls `kiln` with each graph it captures, and
the graph goes through the stages, one subpackage each:

  passes/    graph rewrites before lowering (and the decompositions
             AOTAutograd applies)
  lowering/  a core ATen FX graph becomes a Kiln program description,
             compiled by torch_kiln._C._Program (and cached on disk)
  runtime/   the compiled programs called (through kiln's C++ program
             function after the first calls) and counted (compile_stats)
"""
from .backend import DynamicShapesError, UnsupportedOperatorError, kiln
from .runtime.statistics import compile_stats, reset_compile_stats


def register():
    """Makes backend="kiln" known to torch.compile when torch._dynamo is
    loaded. torch.compile also finds it through the torch_dynamo_backends
    entry point (pyproject.toml); this covers an install without metadata.
    Importing torch._dynamo here would slow every `import torch`, so this
    registers only when Dynamo is already loaded."""
    import sys
    if "torch._dynamo" in sys.modules:
        from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend
        if "kiln" not in _COMPILER_FNS:
            register_backend(name="kiln")(kiln)


__all__ = ["DynamicShapesError", "UnsupportedOperatorError", "compile_stats", "kiln", "register",
           "reset_compile_stats"]
