"""One audited kiln eager step: where each fallback and library op was
called from, and which op first gives numbers that differ from the CPU.

OpAudit is a TorchDispatchMode. For every op on kiln tensors it
- reads the op tracking counters around the call, so an op that reached the
  CPU fallback or the library path (also when called from inside another op's
  C++ kernel) is attributed to the caller's source line;
- with `compare=True`, runs the op again on CPU copies of its inputs and
  compares the outputs (numerics.compare), so a wrong kernel is named by its
  op, not only by the model output it spoils.
Run it under torch.autograd.detect_anomaly: backward ops are then attributed
to the forward line that created their autograd node.
"""
import collections
import os
import re
import sys
import threading
import traceback

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from .. import _C
from . import numerics

_PACKAGE_DIRECTORIES = tuple(
    os.path.dirname(module.__file__) + os.sep
    for module in (torch, sys.modules["torch_kiln"]))
_STANDARD_LIBRARY = os.path.dirname(os.__file__) + os.sep
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')

# Ops whose outputs are uninitialized or random: no CPU comparison.
_UNCOMPARED = {"aten::empty", "aten::empty_strided", "aten::new_empty",
               "aten::new_empty_strided", "aten::empty_like", "aten::set_", "aten::resize_",
               "aten::_local_scalar_dense"}


def is_user_file(path):
    return not (path.startswith(_PACKAGE_DIRECTORIES) or path.startswith(_STANDARD_LIBRARY)
                or path.startswith("<"))


def _describe(path, line, function):
    relative = os.path.relpath(path)
    shown = path if relative.startswith("..") else relative
    return f"{shown}:{line} in {function}"


def _forward_source():
    """The innermost user frame of the current Python stack, or None."""
    for frame in reversed(traceback.extract_stack()):
        if is_user_file(frame.filename):
            return _describe(frame.filename, frame.lineno, frame.name)
    return None


def _backward_source():
    """"backward of <forward source>" inside a backward op, else None."""
    node = torch._C._current_autograd_node()
    if node is None:
        return None
    for entry in reversed(node.metadata.get("traceback_", [])):
        match = _FRAME.search(entry)
        if match and is_user_file(match["file"]):
            return "backward of " + _describe(match["file"], match["line"], match["function"])
    return f"backward ({node.name()})"


def _path_counts():
    """{op: (fallback calls, library calls)} from the op tracking counters."""
    return {name: (paths.get("fallback", 0), paths.get("library", 0))
            for name, paths in _C._executed_ops().items()}


def _on_kiln(value):
    return isinstance(value, torch.Tensor) and value.device.type == "kiln"


class OpAudit(TorchDispatchMode):
    def __init__(self, mode="kiln_eager", compare=True):
        super().__init__()
        self.mode = mode
        self.compare = compare
        self.fallback_sources = collections.defaultdict(collections.Counter)
        self.library_sources = collections.defaultdict(collections.Counter)
        self.op_failures = []      # numerics check dicts of ops that differ from the CPU
        self.ops_compared = 0
        self.compare_errors = []   # ops whose CPU reference could not run
        self.pending = []          # comparisons deferred from other threads (finish())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        if not any(_on_kiln(value) for value in flat):
            return func(*args, **kwargs)
        name = func._schema.name
        compare = self.compare and name not in _UNCOMPARED and \
            torch.Tag.nondeterministic_seeded not in func.tags
        if compare:
            cpu_args, cpu_kwargs = tree_map(
                lambda value: value.detach().cpu() if _on_kiln(value) else value,  # a copy
                (args, kwargs))
        before = _path_counts()
        result = func(*args, **kwargs)
        after = _path_counts()
        changed = {op: (fallback - before.get(op, (0, 0))[0], library - before.get(op, (0, 0))[1])
                   for op, (fallback, library) in after.items()}
        changed = {op: calls for op, calls in changed.items() if any(calls)}
        if changed:
            source = _backward_source() or _forward_source() or "(no Python caller)"
            for op, (fallback, library) in changed.items():
                if fallback:
                    self.fallback_sources[op][source] += fallback
                if library:
                    self.library_sources[op][source] += library
        if compare:
            actual = [(label, tensor.detach().cpu())
                      for label, tensor in numerics.flatten_outputs(result, "output")
                      if _on_kiln(tensor)]
            call = (func, name, cpu_args, cpu_kwargs, actual,
                    _backward_source() or _forward_source())
            if threading.current_thread() is threading.main_thread():
                self._compare(*call)
            else:
                # The autograd engine's kiln thread: a CPU op run here would
                # start a second OpenMP team, which slows every CPU op in the
                # process afterwards (docs/design/library_path.md). Compare after the
                # step, on the main thread.
                self.pending.append(call)
        return result

    def finish(self):
        """Compares the ops deferred from other threads; call after the step."""
        pending, self.pending = self.pending, []
        for call in pending:
            self._compare(*call)

    def _compare(self, func, name, cpu_args, cpu_kwargs, actual_outputs, source):
        try:
            expected = func(*cpu_args, **cpu_kwargs)
        except Exception as error:  # noqa: BLE001: an op the CPU refuses is reported, not fatal
            self.compare_errors.append(f"{name}: {type(error).__name__}: {error}")
            return
        expected_outputs = dict(numerics.flatten_outputs(expected, "output"))
        self.ops_compared += 1
        for label, actual in actual_outputs:
            if label not in expected_outputs:
                continue
            check = numerics.compare(f"{name} {label}", "op", self.mode, actual,
                                     expected_outputs[label])
            if not check["passed"]:
                if source:
                    check["note"] = "; ".join(filter(None, (check["note"], f"called from {source}")))
                self.op_failures.append(check)

    def sources(self, table):
        """{op: [sources, most calls first]} of fallback_sources or library_sources."""
        return {op: [source for source, _ in counter.most_common()]
                for op, counter in table.items()}
