"""torch.compile(model, backend="kiln"): the compiled path (docs/design/compiled_path.md).

backend.py is the entry: Dynamo calls `kiln` with each graph it captures, and
the graph goes through the stages, one subpackage each:

  passes/    graph rewrites before lowering (and the decompositions
             AOTAutograd applies)
  lowering/  a core ATen FX graph becomes a Kiln program description,
             compiled by torch_kiln._C._Program (and cached on disk)
  runtime/   the compiled programs called (through kiln's C++ program
             function after the first calls) and counted (compile_stats)

Nothing here loads with `import torch`: torch.compile finds `kiln` through
the torch_dynamo_backends entry point (pyproject.toml), which imports this
package. `kiln` and the errors it raises load the backend (and Dynamo) when
first named; compile_stats() and reset_compile_stats() do not.
"""
import sys

from .runtime.statistics import compile_stats, reset_compile_stats

# name -> module under this package that defines it, imported on first use (PEP 562).
_FROM_BACKEND = {"kiln", "DynamicShapesError", "UnsupportedOperatorError"}


def __getattr__(name):
    if name in _FROM_BACKEND:
        from . import backend
        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _FROM_BACKEND)


def register():
    """Makes backend="kiln" known to torch._dynamo, when it is already loaded,
    for an install without the torch_dynamo_backends entry point's metadata.
    Where the entry point is known to Dynamo it is left to it: registering
    here as well would make Dynamo's own registration of the entry point fail
    as a duplicate name. Does nothing while Dynamo is not loaded (importing it
    would slow every `import torch`)."""
    if "torch._dynamo" not in sys.modules:
        return
    from importlib.metadata import EntryPoint

    from torch._dynamo.backends.registry import _BACKENDS, _COMPILER_FNS, register_backend
    if "kiln" in _COMPILER_FNS or isinstance(_BACKENDS.get("kiln"), EntryPoint):
        return
    from .backend import kiln
    register_backend(name="kiln")(kiln)


__all__ = ["DynamicShapesError", "UnsupportedOperatorError", "compile_stats", "kiln", "register",
           "reset_compile_stats"]
