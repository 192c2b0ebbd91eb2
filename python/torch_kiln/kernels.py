"""Custom kernels for the kiln device, written in C against Kiln's kernel ABI.

A :class:`CKernel` is a C function that Kiln compiles and caches with the
toolchain and kernel cache of its own kernels (``KILN_CC``, ``KILN_CACHE_DIR``,
``torch_kiln.compiler_stats()``), and launches on the current stream, split
over threads, like them. Wrap its launches in ``torch.library.custom_op`` and
the op works eagerly, with autograd (``register_autograd``), inside
``torch.compile(backend="kiln")`` graphs (as an extern call), with
``torch.library.opcheck``, and in kiln-eval, where its launches are counted
under the path ``custom``. The guide is docs/guides/custom_kernels.md; a
fused RMSNorm written this way is examples/custom_rms_norm.py.

The kernel::

    scale = torch_kiln.kernels.CKernel(r'''
    KILN_KERNEL(scale) {                 /* called on pieces [begin, end) of the positions */
      const float* x = KILN_DATA(0, const float);
      float* out = KILN_DATA(1, float);  /* operands: inputs, then outputs */
      for (int64_t i = begin; i < end; ++i) out[i] = x[i] * (float)KILN_REAL(0);
    }
    ''', dtypes=[torch.float32, torch.float32])
    scale(inputs=[x], outputs=[out], scalars=[2.0], positions="elements")

Errors name the kernel and the line: a C compile error's diagnostics point at
the Python file and line the source was written on (a ``#line`` directive),
and a bad launch (an output of the wrong shape, a tensor on another device,
a dtype the kernel does not read) raises before anything is queued, naming
the kernel, the operand and the line of the launch.
"""
import linecache
import os
import re
import sys

import torch

from . import _C

from .kernel_language import KernelFunction, KernelLanguageError, kernel

__all__ = ["CKernel", "KernelCompileError", "kernel", "KernelFunction", "KernelLanguageError"]

_KERNEL_DEFINITION = re.compile(r"KILN_KERNEL\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)")
_POSITION_KINDS = ("rows", "elements")


class KernelCompileError(RuntimeError):
    """A custom kernel's C source did not compile. The message names the
    kernel and holds the compiler's diagnostics, which point at the file and
    line the source was written on."""


def _caller_location(source, depth):
    """(file, line of the source's first line) for a source string written in
    the caller's file, found by its first non-blank line nearest above the
    call; (file, 1) when the text is not found there (a generated source)."""
    frame = sys._getframe(depth + 1)
    file, call_line = frame.f_code.co_filename, frame.f_lineno
    source_lines = source.split("\n")
    first = next((index for index, text in enumerate(source_lines) if text.strip()), None)
    if first is None or not os.path.isfile(file):
        return file, 1
    wanted = source_lines[first].rstrip()
    file_lines = linecache.getlines(file)
    matches = [number for number, text in enumerate(file_lines, 1) if text.rstrip("\n").rstrip() == wanted]
    if not matches:
        return file, 1
    above = [number for number in matches if number <= call_line]
    line = max(above) if above else min(matches)
    return file, line - first


class CKernel:
    """A kernel in C against Kiln's kernel ABI (compiler/kernel_abi.h).

    Arguments:
        source: a C translation unit defining exactly one kernel with
            ``KILN_KERNEL(name) { ... }``; it may define static helpers.
        name: the kernel's name in errors, cache files and op tracking
            (default: the ``KILN_KERNEL`` function's name). Name it after the
            op it implements (``"mylib::rms_norm_forward"``) so kiln-eval's
            report reads well.
        dtypes: optional, the dtype of each operand (inputs, then outputs);
            a launch with another dtype raises instead of reading garbage.
        defines: optional ``{macro: value}`` put before the source as
            ``#define`` lines (one source, several dtypes: see ``variant``).
        file, line: where the source was written, for diagnostics (default:
            found in the caller's file).

    The source is compiled on the first launch (or by :meth:`compile`), once
    per process, and loaded from Kiln's disk cache in later processes.
    """

    def __init__(self, source, *, name=None, dtypes=None, defines=None, file=None, line=None, _depth=1):
        entries = _KERNEL_DEFINITION.findall(source)
        if len(entries) != 1:
            raise ValueError("a custom kernel's source must define exactly one function with "
                             f"KILN_KERNEL(name); found {len(entries)}" + (f": {entries}" if entries else ""))
        self.entry = entries[0]
        self.name = name or self.entry
        self.source = source
        self.dtypes = None if dtypes is None else tuple(dtypes)
        self.defines = dict(defines or {})
        if file is None:
            file, found_line = _caller_location(source, _depth)
            line = line or found_line
        self.file, self.line = file, int(line or 1)
        self._handle = None

    @classmethod
    def from_file(cls, path, **options):
        """A kernel whose source is the C file at `path` (diagnostics name it)."""
        with open(path) as handle:
            return cls(handle.read(), file=os.path.abspath(path), line=1, **options)

    def variant(self, *, name=None, dtypes=None, **defines):
        """The same source with more ``#define`` lines, e.g.
        ``kernel.variant(scalar_t="double", dtypes=[torch.float64] * 3)``."""
        merged = {**self.defines, **defines}
        return CKernel(self.source, name=name or self.name, dtypes=dtypes if dtypes is not None else self.dtypes,
                       defines=merged, file=self.file, line=self.line)

    def translation_unit(self):
        """The C text Kiln compiles: the prelude, the custom macros, the
        defines, then the source behind a #line directive."""
        return _C._custom_kernel_translation_unit(self._defined_source(), self.file, self.line)

    def _defined_source(self):
        # The defines go before the #line directive the C++ side adds, so the
        # source's own lines keep their numbers.
        lines = "".join(f"#define {macro} {value}\n" for macro, value in self.defines.items())
        return (lines + f'#line {self.line} "{self.file}"\n' + self.source) if lines else self.source

    def compile(self):
        """Compiles (or loads from the caches) now; returns self."""
        if self._handle is None:
            try:
                self._handle = _C._custom_kernel_load(self.name, self.entry, self._defined_source(),
                                                      self.file, self.line)
            except RuntimeError as error:
                raise KernelCompileError(str(error)) from None
        return self

    def __call__(self, *, inputs=(), outputs, shape=None, scalars=(), positions="rows",
                 cost_per_position=None, single_threaded=False):
        """Launches the kernel on the current stream of the outputs' device.

        inputs, outputs: kiln tensors; the kernel sees them as operands 0..n-1
            (inputs first), with their strides broadcast to `shape` (stride 0
            along a broadcast dim). Outputs must have exactly `shape`.
        shape: the launch shape (default: the first output's); KILN_SIZE(0) is
            its innermost size.
        scalars: floats (KILN_REAL(i)) and ints or bools (KILN_INT(i)).
        positions: how the kernel's [begin, end) range is counted, so Kiln can
            split it over threads: "rows" (every index of the shape but the
            innermost: the kernel loops over a row itself), "elements", or an
            int of your own.
        cost_per_position: elements each position touches (default: the row
            length for "rows", else 1); small launches run on one thread.
        single_threaded: call the kernel once over all positions (a kernel
            whose positions write the same elements).
        """
        outputs = list(outputs)
        inputs = list(inputs)
        if not outputs:
            raise ValueError(f"custom kernel '{self.name}': a launch needs at least one output")
        shape = list(outputs[0].shape if shape is None else shape)
        count, cost = self._positions(shape, positions, cost_per_position)
        self._check_dtypes(inputs, outputs)
        self.compile()
        try:
            _C._custom_kernel_launch(self._handle, inputs, outputs, shape, list(scalars), count, cost,
                                     bool(single_threaded))
        except RuntimeError as error:
            frame = sys._getframe(1)
            raise RuntimeError(f"{error} (kernel defined at {self.file}:{self.line}, launched at "
                               f"{frame.f_code.co_filename}:{frame.f_lineno})") from None

    def _positions(self, shape, positions, cost_per_position):
        elements = 1
        for size in shape:
            elements *= int(size)
        if positions == "rows":
            row = int(shape[-1]) if shape else 1
            return (elements // row if row else 0), cost_per_position or max(row, 1)
        if positions == "elements":
            return elements, cost_per_position or 1
        if isinstance(positions, int) and not isinstance(positions, bool):
            return positions, cost_per_position or 1
        raise ValueError(f"custom kernel '{self.name}': positions must be one of {_POSITION_KINDS} or an int, "
                         f"not {positions!r}")

    def _check_dtypes(self, inputs, outputs):
        if self.dtypes is None:
            return
        operands = inputs + outputs
        if len(operands) != len(self.dtypes):
            raise ValueError(f"custom kernel '{self.name}' takes {len(self.dtypes)} tensors "
                             f"(inputs, then outputs), but the launch passed {len(operands)}")
        for index, (tensor, dtype) in enumerate(zip(operands, self.dtypes)):
            if tensor.dtype != dtype:
                role, number = ("input", index) if index < len(inputs) else ("output", index - len(inputs))
                raise TypeError(f"custom kernel '{self.name}': {role} {number} is {tensor.dtype}, "
                                f"but the kernel reads {dtype}")

    def __repr__(self):
        return f"CKernel({self.name!r}, defined at {self.file}:{self.line})"
