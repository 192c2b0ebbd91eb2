"""Kiln kernels for custom ops that other libraries define.

A library that defines a custom op (``torch.library.custom_op``) gives it one
implementation for every device; a device backend may register its own for
its device type, as CUDA libraries do for theirs. Kiln does this for the ops
below, where the library's own implementation reads a tensor back to the host
(a stream sync) and dispatches one op per group.

transformers (``integrations/moe.py``): under ``torch.compile``, experts whose
weights are not bfloat16 call ``transformers::grouped_mm_fallback`` (and, in
backward, ``transformers::grouped_mm_fallback_backward``) instead of
``torch._grouped_mm``, whose meta function takes bfloat16 only. Their own
implementation reads the offsets with ``.tolist()`` and loops over the
experts; on kiln they run as ``aten::_grouped_mm`` calls on the stream, with
the fallback's results: rows past the last offset are zero (kiln's
``_grouped_mm`` writes them, where PyTorch's leaves them unwritten), and so
is the weight gradient of an expert without tokens.

The kernels are registered once the library has defined its ops:
``register_if_defined()`` runs each time kiln compiles a graph, which is
where these ops appear (transformers calls them only while compiling).
"""
import torch

# (namespace, op name) -> the kiln kernel, for ops of other libraries.
_KERNELS = {}
_registered = set()


def _aligned_matrix(matrix):
    """Whether aten::_grouped_mm takes `matrix` as an operand: rows or
    columns unit-strided in its last two dims, the other stride a multiple of
    16 bytes, and its data 16-byte aligned."""
    alignment = 16 // matrix.element_size()
    rows, columns = matrix.shape[-2:]
    row_stride, column_stride = matrix.stride()[-2:]
    if column_stride == 1 and row_stride >= max(1, columns):
        leading = row_stride
    elif row_stride == 1 and column_stride >= max(1, rows):
        leading = column_stride
    else:
        return False
    return leading % alignment == 0 and matrix.data_ptr() % 16 == 0


def _takes_grouped_mm(*matrices):
    """Whether aten::_grouped_mm takes these operands (else the library's loop runs)."""
    dtype = matrices[0].dtype
    return (dtype in (torch.float32, torch.bfloat16) and all(matrix.dtype == dtype for matrix in matrices)
            and all(_aligned_matrix(matrix) for matrix in matrices))


def _grouped_mm_fallback(input, weight, offs):
    """transformers::grouped_mm_fallback: input [S, K] sorted by expert,
    weight [E, K, N], offs [E] cumulative rows -> [S, N]."""
    if offs.numel() == 0 or not _takes_grouped_mm(input, weight):
        return _reference_grouped_mm_fallback(input, weight, offs)
    # kiln's _grouped_mm writes zeros past the last offset (grouped_mm.cc)
    return torch._grouped_mm(input, weight, offs=offs.to(torch.int32))


def _grouped_mm_fallback_backward(input, weight, offs, grad_output):
    """transformers::grouped_mm_fallback_backward: (grad_input, grad_weight)."""
    if offs.numel() == 0 or not _takes_grouped_mm(input, weight, grad_output):
        return _reference_grouped_mm_fallback_backward(input, weight, offs, grad_output)
    offsets = offs.to(torch.int32)
    grad_input = torch._grouped_mm(grad_output, weight.transpose(-2, -1), offs=offsets)
    # 2-d by 2-d: offsets split the rows (the products' inner dimension).
    grad_weight = torch._grouped_mm(input.transpose(0, 1), grad_output, offs=offsets)
    return grad_input, grad_weight


def _reference_grouped_mm_fallback(input, weight, offs):
    """The library's own loop, for dtypes aten::_grouped_mm does not take."""
    output = torch.zeros(input.size(0), weight.size(2), device=input.device, dtype=input.dtype)
    start = 0
    for expert, end in enumerate(offs.tolist()):
        if start != end:
            torch.mm(input[start:end], weight[expert], out=output[start:end])
        start = end
    return output


def _reference_grouped_mm_fallback_backward(input, weight, offs, grad_output):
    grad_input = torch.zeros_like(input)
    grad_weight = torch.zeros_like(weight)
    start = 0
    for expert, end in enumerate(offs.tolist()):
        if start != end:
            torch.mm(grad_output[start:end], weight[expert].T, out=grad_input[start:end])
            torch.mm(input[start:end].T, grad_output[start:end], out=grad_weight[expert])
        start = end
    return grad_input, grad_weight


_KERNELS[("transformers", "grouped_mm_fallback")] = _grouped_mm_fallback
_KERNELS[("transformers", "grouped_mm_fallback_backward")] = _grouped_mm_fallback_backward


def _is_defined(namespace, name):
    try:
        torch._C._dispatch_find_schema_or_throw(f"{namespace}::{name}", "")
    except RuntimeError:
        return False
    return True


def register_if_defined():
    """Registers the kiln kernel of every op above that its library has
    defined by now; each once."""
    for (namespace, name), kernel in _KERNELS.items():
        qualified = f"{namespace}::{name}"
        if qualified in _registered or not _is_defined(namespace, name):
            continue
        torch.library.register_kernel(qualified, "kiln", kernel)
        _registered.add(qualified)


def registered():
    """The qualified names of the ops kiln has registered kernels for."""
    return sorted(_registered)


__all__ = ["register_if_defined", "registered"]
