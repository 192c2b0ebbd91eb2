"""Kiln's kernel language: a Python function of PyTorch's pointwise ops and
reductions, compiled by Kiln's graph compiler into fused kernels (Kiln IR,
then C, through the kernel cache) and run as one piece of device work.

    @torch_kiln.kernels.kernel
    def rms_norm(x, weight, eps: float = 1e-6):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

The body is what the kernel computes; Kiln decides the loops. On kiln
tensors a call traces the body once per signature (dtypes, shapes, strides
and the values of non-tensor arguments) with make_fx, lowers it as a
torch.compile graph is lowered (compile/lowering/graph_lowering.py), refuses
it unless every op fuses (no extern calls: a product, a convolution or a
data-dependent op is not a kernel-language op), and runs the program; a
later call with the same signature runs the same program. RMSNorm's body
becomes one row kernel: the sum of squares and the normalisation in one pass.

- Autograd: the backward is the body's vector-Jacobian product
  (torch.func.vjp), compiled the same way into its own kernels.
- torch.compile: inside a compiled model the body is traced inline, so the
  backend fuses it with the ops around it.
- On CPU tensors the body runs as PyTorch ops: the reference.
- kiln-eval and op tracking count each run under the kernel's name, path
  "custom".
"""
import functools
import inspect
import threading

import torch

from . import _C


class KernelLanguageError(RuntimeError):
    """A kernel-language function uses an op Kiln does not fuse into a kernel."""


def _signature(arguments):
    parts = []
    for value in arguments:
        if isinstance(value, torch.Tensor):
            parts.append((value.dtype, tuple(value.shape), value.stride(), value.device))
        elif isinstance(value, (bool, int, float)) or value is None:
            parts.append((type(value), value))
        else:
            raise TypeError(f"kernel arguments are tensors, numbers, bools or None, not {type(value).__name__}")
    return tuple(parts)


def _line_calling(body, arguments, matches):
    """'file:line' of the body's line that calls the first ATen op for which
    `matches(op)` holds, found by running the body again on fake tensors."""
    import traceback
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    file = body.__code__.co_filename
    found = []

    class Finder(TorchDispatchMode):
        def __torch_dispatch__(self, op, types, args=(), kwargs=None):
            if not found and matches(op):
                frames = [frame for frame in traceback.extract_stack() if frame.filename == file]
                if frames:
                    found.append(f"{frames[-1].filename}:{frames[-1].lineno}: {frames[-1].line}")
            return op(*args, **(kwargs or {}))

    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
            fakes = [fake_mode.from_tensor(value) if isinstance(value, torch.Tensor) else value
                     for value in arguments]
            with torch.no_grad(), Finder():
                body(*fakes)
    except Exception:  # the line is a courtesy: the error it decorates is the one to raise
        pass
    return found[0] if found else "line unknown"


class _Compiled:
    """One signature's program, and how its outputs map back."""

    def __init__(self, kernel, arguments):
        from torch.fx.experimental.proxy_tensor import make_fx
        from .compile.backend import _Runner
        from .compile.lowering.graph_lowering import UnsupportedOperatorError, lower_graph
        from .compile.passes.decompositions import decompositions

        with torch.no_grad():
            gm = make_fx(kernel.body, decomposition_table=decompositions(), tracing_mode="fake")(*arguments)
        random = next((node.target for node in gm.graph.nodes if node.op == "call_function" and
                       isinstance(node.target, torch._ops.OpOverload) and
                       torch.Tag.nondeterministic_seeded in node.target.tags), None)
        if random is not None:
            raise KernelLanguageError(
                f"kernel '{kernel.name}': {random} draws random numbers, which the kernel language does not do "
                f"({_line_calling(kernel.body, arguments, lambda op: torch.Tag.nondeterministic_seeded in op.tags)})")
        try:
            lowered = lower_graph(gm, fallback="error")
        except UnsupportedOperatorError as error:
            raise KernelLanguageError(f"kernel '{kernel.name}': {error}") from None
        # Views (a reshape of a reduction's result, say) run as calls of their
        # own but only make aliases: no device work.
        externs = [node["label"] for node in lowered.description["nodes"]
                   if node["kind"] == "extern" and not node.get("aliases_input")]
        if externs:
            where = _line_calling(kernel.body, arguments, lambda op: str(op) == externs[0])
            raise KernelLanguageError(
                f"kernel '{kernel.name}': {externs[0]} is not in the kernel language: Kiln runs it as a "
                f"call of its own, not fused into a kernel ({where}). A kernel's body is pointwise ops, "
                "reductions, views and broadcasting; call other ops outside it.")
        output = gm.graph.output_node().args[0]
        self.single = not isinstance(output, (tuple, list))
        self.program = _C._Program(dict(lowered.description, run_inline=False))
        self.runner = _Runner(self.program, lowered)
        self.statistics = self.program.statistics()

    def __call__(self, arguments):
        results = self.runner(list(arguments))
        return results[0] if self.single else tuple(results)


class KernelFunction:
    """A kernel-language function (see the module docstring); made by
    :func:`kernel`."""

    def __init__(self, body, name=None):
        functools.update_wrapper(self, body)
        self.body = body
        self.name = name or f"{body.__module__}.{body.__qualname__}"
        self._programs = {}
        self._lock = threading.Lock()
        self._backward = None
        self._parameters = inspect.signature(body)

    def _positional(self, arguments, keywords):
        """The arguments as one positional tuple, defaults filled in."""
        bound = self._parameters.bind(*arguments, **keywords)
        bound.apply_defaults()
        if bound.kwargs:
            raise TypeError(f"kernel '{self.name}': keyword-only parameters are not supported "
                            f"({', '.join(bound.kwargs)})")
        return bound.args

    def compiled(self, *arguments, **keywords):
        """The program for these arguments' signature, compiled on first use."""
        arguments = self._positional(arguments, keywords)
        key = _signature(arguments)
        program = self._programs.get(key)
        if program is None:
            with self._lock:
                program = self._programs.get(key)
                if program is None:
                    program = self._programs[key] = _Compiled(self, arguments)
        return program

    @property
    def signatures_compiled(self):
        return len(self._programs)

    def run(self, *arguments, **keywords):
        """The kernels, without autograd."""
        arguments = self._positional(arguments, keywords)
        program = self.compiled(*arguments)
        _C._record_custom_op(self.name)
        return program(arguments)

    def __call__(self, *arguments, **keywords):
        if torch.compiler.is_compiling():
            return self.body(*arguments, **keywords)  # traced inline: the backend fuses it with its neighbours
        arguments = self._positional(arguments, keywords)
        tensors = [value for value in arguments if isinstance(value, torch.Tensor)]
        if not any(tensor.device.type == "kiln" for tensor in tensors) or \
                any(tensor.numel() == 0 for tensor in tensors):
            # CPU tensors: the reference. Empty ones: no work to fuse, and the
            # graph compiler runs empty reductions as calls of their own.
            return self.body(*arguments)
        if torch.is_grad_enabled() and any(tensor.requires_grad for tensor in tensors):
            return _KernelAutograd.apply(self, *arguments)
        return self.run(*arguments)

    def backward_kernel(self):
        """The kernel computing the gradients of the tensor arguments from
        (arguments..., output gradients...)."""
        if self._backward is None:
            self._backward = KernelFunction(functools.partial(_vector_jacobian_product, self.body),
                                            name=self.name + ".backward")
        return self._backward

    def as_custom_op(self, name, *, mutates_args=()):
        """The kernel as a PyTorch operator, `torch.ops.<namespace>.<name>`:
        a torch.library.custom_op whose kiln kernel is this kernel's program
        and whose CPU kernel is the body, with the body as its fake (meta)
        function and the kernel's backward as its autograd formula, so
        torch.library.opcheck can check it. Its schema comes from the body's
        type annotations (``x: torch.Tensor, eps: float`` and the return
        type). Inside torch.compile the op stays whole, an extern call; call
        the kernel itself to have the body fused with its neighbours."""
        body, parameters = self.body, self._parameters

        from torch._library.infer_schema import infer_schema

        def kiln_kernel(*arguments, **keywords):
            return _fresh(self.run(*arguments, **keywords))
        kiln_kernel.__signature__ = parameters
        kiln_kernel.__name__ = body.__name__
        op = torch.library.custom_op(name, mutates_args=mutates_args, device_types="kiln",
                                     schema=infer_schema(body, mutates_args=mutates_args))(kiln_kernel)
        op.register_kernel("cpu")(lambda *arguments: _fresh(body(*arguments)))
        op.register_fake(lambda *arguments: _fresh(body(*arguments)))

        def setup_context(ctx, inputs, output):
            _save_arguments(ctx, inputs)

        def backward(ctx, *grads):
            arguments = _saved_arguments(ctx)
            # Traced (AOTAutograd, fake tensors): the body's vector-Jacobian product as PyTorch ops.
            traced = torch._guards.detect_fake_mode(arguments) is not None or torch.compiler.is_compiling()
            on_kiln = any(isinstance(value, torch.Tensor) and value.device.type == "kiln" for value in arguments)
            vjp = self.backward_kernel().run if on_kiln and not traced else \
                functools.partial(_vector_jacobian_product, body)
            return _argument_gradients(vjp, arguments, grads)

        op.register_autograd(backward, setup_context=setup_context)
        return op

    def __repr__(self):
        return f"<kiln kernel {self.name}: {self.signatures_compiled} signatures compiled>"


def _fresh(result):
    """A custom op may not return its inputs or views of them: copies where it would."""
    if isinstance(result, tuple):
        return tuple(_fresh(value) for value in result)
    return result.clone() if result._base is not None else result


def _vector_jacobian_product(body, *values):
    """(gradient of each tensor argument) of `body` at the arguments, for
    the output gradients after them; values = (count, *arguments, *grads)."""
    count, rest = values[0], values[1:]
    arguments, grads = rest[:count], rest[count:]
    positions = [index for index, value in enumerate(arguments) if isinstance(value, torch.Tensor)]

    def of_tensors(*tensors):
        full = list(arguments)
        for index, tensor in zip(positions, tensors):
            full[index] = tensor
        return body(*full)

    _, pullback = torch.func.vjp(of_tensors, *(arguments[index] for index in positions))
    return tuple(pullback(grads[0] if len(grads) == 1 else tuple(grads)))


_SAVED = object()  # marks an argument saved for backward (a tensor)


def _save_arguments(ctx, arguments):
    ctx.arguments = [_SAVED if isinstance(value, torch.Tensor) else value for value in arguments]
    ctx.save_for_backward(*(value for value in arguments if isinstance(value, torch.Tensor)))


def _saved_arguments(ctx):
    saved = iter(ctx.saved_tensors)
    return [next(saved) if value is _SAVED else value for value in ctx.arguments]


def _argument_gradients(vjp, arguments, grads):
    """One gradient per argument (None for the non-tensors), from
    vjp(count, *arguments, *grads), which returns the tensors' gradients."""
    grads = [grad.contiguous() for grad in grads]
    tensor_grads = iter(vjp(len(arguments), *arguments, *grads))
    return tuple(next(tensor_grads) if isinstance(value, torch.Tensor) else None for value in arguments)


class _KernelAutograd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, kernel, *arguments):
        ctx.kernel = kernel
        _save_arguments(ctx, arguments)
        return kernel.run(*arguments)

    @staticmethod
    def backward(ctx, *grads):
        return (None, *_argument_gradients(ctx.kernel.backward_kernel().run, _saved_arguments(ctx), grads))


def kernel(body=None, *, name=None):
    """Makes `body` a kernel-language function: ``@kernel`` or
    ``@kernel(name="mylib::rms_norm")``."""
    if body is None:
        return lambda function: KernelFunction(function, name)
    return KernelFunction(body, name)
