"""Traced (fake) convolutions on kiln get the layouts Kiln's kernels give.

torch.compile and torch.export trace with fake tensors. PyTorch's fake
convolution takes its result's memory format from
torch._C._conv_determine_backend_memory_format, which answers "contiguous" for
every backend outside PyTorch but XPU. Kiln's kernels, like the CPU's, keep a
channels-last input channels-last (aten/library/convolution.cc: the result and
the input gradient follow the input's suggested memory format, the weight
gradient the weight's). A graph traced with the contiguous answer records
views the real channels-last tensor cannot take (torch.compile of
`conv2d(x, w).flatten(1)` on a channels-last input failed at run time), and
writes NCHW values after a channels-last convolution. This wraps PyTorch's
fake implementation so that, for kiln tensors, it follows Kiln's kernels.
"""
import torch
from torch._prims_common import suggest_memory_format
from torch._subclasses import fake_impls
from torch._subclasses.fake_tensor import FakeTensor

aten = torch.ops.aten
# Where the convolution's input and weight are, positionally, per op.
_OPERANDS = {aten.convolution.default: (0, 1), aten.convolution_backward.default: (1, 2)}
_NAMES = ("input", "weight")


def _operand(args, kwargs, position, name):
    return args[position] if len(args) > position else kwargs.get(name)


def _like(fake_mode, tensor, model):
    """`tensor` with the strides Kiln's kernel allocates it with: an empty
    tensor in `model`'s suggested memory format (also where the two formats
    differ only in the stride of a size-1 dimension)."""
    if not isinstance(tensor, torch.Tensor) or not isinstance(model, torch.Tensor) or tensor.dim() != model.dim():
        return tensor
    with fake_mode:
        allocated = torch.empty(tensor.shape, dtype=tensor.dtype, device=tensor.device,
                                memory_format=suggest_memory_format(model))
    return tensor if allocated.stride() == tensor.stride() else allocated


def _following_kiln(original):
    def convolution(fake_mode, func, *args, **kwargs):
        result = original(fake_mode, func, *args, **kwargs)
        input_, weight = (_operand(args, kwargs, position, name)
                          for position, name in zip(_OPERANDS[func], _NAMES))
        if not isinstance(input_, FakeTensor) or input_.fake_device.type != "kiln":
            return result
        if func is aten.convolution.default:
            return _like(fake_mode, result, input_)
        grad_input, grad_weight, grad_bias = result
        return _like(fake_mode, grad_input, input_), _like(fake_mode, grad_weight, weight), grad_bias

    convolution.kiln_original = original
    return convolution


def install():
    """Wraps the fake convolution and its backward; idempotent. The table is
    PyTorch's private one: if a release moves it, nothing is wrapped and
    tests/python/test_compile_layouts.py fails, rather than the import."""
    table = getattr(fake_impls, "op_implementations_dict", None)
    if not isinstance(table, dict):
        return
    for op in _OPERANDS:
        implementation = table.get(op)
        if implementation is not None and not hasattr(implementation, "kiln_original"):
            table[op] = _following_kiln(implementation)
