"""The decompositions the kiln backend hands AOTAutograd: PyTorch's core ATen
set, plus a few ops whose parts Kiln's graph compiler fuses better than its
eager kernel runs the whole op.

- Batch norm (inference and training) becomes a mean and a variance, which
  are reductions, and pointwise arithmetic, which fuses with the ReLU after it
  into one pass over the activations; PyTorch's own decompositions, the ones
  Inductor uses. Layer norm, softmax and log_softmax (and their backward) the
  same way: a few fused kernels, each launched at a bound launch's cost
  (docs/design/compiled_path.md), instead of an eager kernel call.
- max_pool2d_with_indices with non-overlapping windows (stride = kernel, no
  padding or dilation, the common 2x2 pool), in floating point, contiguous or
  channels-last (its results then channels-last, as ATen's), becomes a
  pointwise scan over the window's taps, each a strided view of the input:
  one fused kernel, which also fuses with the ReLU before it. The scan is
  ATen's, so values and indices match its kernel exactly: a tap replaces the
  running maximum when greater or NaN, and the index is that tap's offset in
  its input plane. Where the indices are not used (inference), the program
  computes none. Other pools stay one call of Kiln's kernel.
- Not decomposed: _scaled_dot_product_flash_attention_for_cpu, the attention
  that scaled_dot_product_attention becomes on kiln as on the CPU. It stays one
  call (forward and backward) of the CPU's flash kernel on the library path
  (csrc/kiln/aten/library/attention.cc), as Inductor's CPU graphs call it;
  PyTorch's decomposition returns the attention weights in place of the
  log-sum-exp. A compiled attention with a mask (each variant in its own
  process, two processes each) took 162-167 us as the flash call against
  247-550 us as the math composition at the suite's ViT shape (4x4 heads, 65
  tokens, 32 wide) and 8.8-9.7 against 14.7-15.0 ms at 8x8x256x64, but 71-72
  against 61-63 us at its Llama shape (2x4 heads over 2 key heads, 32 tokens):
  there the flash kernel's setup outweighs the work.
- _safe_softmax (attention's softmax: a row of only -inf gives zeros, not
  NaN) finds those rows from the softmax's own row maximum, instead of
  PyTorch's second reduction over the whole input (eq, all): one pass over
  the attention scores fewer, with the same values.
"""
import functools

import torch
from torch._decomp import core_aten_decompositions, get_decompositions

from .foreach import foreach_decompositions

aten = torch.ops.aten

_FROM_PYTORCH = [
    aten._native_batch_norm_legit_no_training.default,
    aten._native_batch_norm_legit_functional.default,
    aten._native_batch_norm_legit.default,
    aten._native_batch_norm_legit.no_stats,
    aten.native_batch_norm.default,
    aten._softmax.default,
    aten._log_softmax.default,
    aten._softmax_backward_data.default,
    aten._log_softmax_backward_data.default,
    aten.native_layer_norm.default,
]


def var_mean(input, dim=None, *, correction=None, keepdim=False):
    """Two passes, as ATen's CPU kernels: the mean, then the mean of squared
    differences from it. Both are reductions the graph compiler fuses the
    subtraction and square into. (PyTorch's own decomposition is written in
    prims, which the graph lowering does not take.)"""
    if not input.dtype.is_floating_point:
        return NotImplemented
    dims = list(range(input.dim())) if dim is None or len(dim) == 0 else [d % max(input.dim(), 1) for d in dim]
    count = 1
    for d in dims:
        count *= input.shape[d]
    correction = 1 if correction is None else correction
    mean = torch.mean(input, dims, keepdim=True)
    squares = torch.sum(torch.square(input - mean), dims, keepdim=keepdim)
    variance = squares / max(count - correction, 0)
    return variance, (mean if keepdim else torch.squeeze(mean, dims))


def safe_softmax(self, dim, dtype=None):
    """softmax(self, dim, dtype) with the rows whose inputs are all -inf set
    to 0. A row is all -inf exactly when its maximum is -inf (a NaN makes the
    maximum NaN, and such a row stays NaN, as in PyTorch's decomposition). The
    softmax is PyTorch's _softmax decomposition written out, so that its
    maximum is the one tested: computed in float for half types, rounded to
    the result's dtype after."""
    x = self if dtype is None else self.to(dtype)
    if x.numel() == 0 or x.dim() == 0 or not x.dtype.is_floating_point:
        return _pytorch_safe_softmax(self, dim, dtype)
    computation = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    values = x.contiguous().to(computation)
    maximum = torch.amax(values, dim, keepdim=True)
    unnormalized = torch.exp(values - maximum)
    result = (unnormalized / torch.sum(unnormalized, dim, keepdim=True)).to(x.dtype)
    # Tested on the row maximum itself: a row value, which the row kernel
    # computing the softmax broadcasts along the row.
    fully_masked = torch.eq(maximum, float("-inf"))
    return torch.where(fully_masked, torch.zeros_like(result), result)


def _pytorch_safe_softmax(self, dim, dtype=None):
    from torch._decomp.decompositions import safe_softmax as pytorch_safe_softmax
    return pytorch_safe_softmax(self, dim, dtype)


def _pair(values, default=None):
    if values is None or len(values) == 0:
        return default
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def max_pool2d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """ATen's max_pool2d_with_indices for non-overlapping windows, as a scan
    over strided views; NotImplemented (Kiln's kernel runs) otherwise."""
    kernel = _pair(kernel_size)
    strides = _pair(stride, kernel)
    paddings = _pair(padding if isinstance(padding, (list, tuple)) else [padding])
    dilations = _pair(dilation if isinstance(dilation, (list, tuple)) else [dilation])
    if (not input.dtype.is_floating_point or input.dim() not in (3, 4) or strides != kernel
            or paddings != (0, 0) or dilations != (1, 1) or ceil_mode
            or not (input.is_contiguous() or input.is_contiguous(memory_format=torch.channels_last))):
        return NotImplemented
    height, width = input.shape[-2], input.shape[-1]
    output_height, output_width = height // kernel[0], width // kernel[1]
    if output_height == 0 or output_width == 0 or input.numel() == 0:
        return NotImplemented
    # Every tap's view first, then the scan: the graph compiler fuses a
    # chain of pointwise ops that no other call interrupts.
    # A tap's offset in its plane, (oh * kh + row) * W + ow * kw + column, is
    # the window's corner plus the tap's place in the window (row * W +
    # column). The corners are one small tensor; each tap adds its constant
    # at the taps' size, inside the scan's kernel.
    taps, tap_offsets = [], []
    rows = torch.arange(output_height, device=input.device) * (kernel[0] * width)
    columns = torch.arange(output_width, device=input.device) * kernel[1]
    corners = (rows[:, None] + columns).expand(input.shape[:-2] + (output_height, output_width))
    for row in range(kernel[0]):
        for column in range(kernel[1]):
            taps.append(input[..., row:row + kernel[0] * output_height:kernel[0],
                              column:column + kernel[1] * output_width:kernel[1]])
            tap_offsets.append(row * width + column)
    best, index = taps[0], corners  # the first tap is the corner itself
    for tap, tap_offset in zip(taps[1:], tap_offsets[1:]):
        better = (tap > best) | torch.isnan(tap)
        best = torch.where(better, tap, best)
        index = torch.where(better, corners + tap_offset, index)
    if input.dim() == 4 and not input.is_contiguous():
        return (best.contiguous(memory_format=torch.channels_last),
                index.contiguous(memory_format=torch.channels_last))
    return best.contiguous(), index.contiguous()


# Batch norms that may run in evaluation mode, with the position of their
# `training` argument (None: always evaluation).
_BATCH_NORMS = {
    aten.native_batch_norm.default: 5,
    aten._native_batch_norm_legit.default: 5,
    aten._native_batch_norm_legit_functional.default: 5,  # what functionalization makes of the one above
    aten._native_batch_norm_legit_no_training.default: None,
}


def _with_empty_evaluation_statistics(decomposition, training_position):
    """PyTorch's batch norm decomposition, whose saved mean and inverse
    standard deviation in evaluation mode are empty, as ATen's kernels return
    them (the backward then reads the running statistics). The decomposition
    computes per-channel ones, which nothing reads."""
    def batch_norm(input, *args, **kwargs):
        results = decomposition(input, *args, **kwargs)
        if training_position is not None:
            training = (args[training_position - 1] if len(args) >= training_position
                        else kwargs["training"])
            if training:
                return results
        return (results[0], input.new_empty((0,)), input.new_empty((0,)), *results[3:])
    return batch_norm


@functools.lru_cache(maxsize=None)
def _table():
    table = dict(core_aten_decompositions())
    table.update(get_decompositions(_FROM_PYTORCH))
    # Attention stays one call of the CPU's flash kernel on the library path
    # (forward and backward), as Inductor keeps it: PyTorch's decomposition
    # returns the attention weights where the op returns the log-sum-exp.
    table.pop(aten._scaled_dot_product_flash_attention_for_cpu.default, None)
    for op, training_position in _BATCH_NORMS.items():
        table[op] = _with_empty_evaluation_statistics(table[op], training_position)
    table[aten.max_pool2d_with_indices.default] = max_pool2d_with_indices
    table[aten.var_mean.correction] = var_mean
    table[aten._safe_softmax.default] = safe_softmax
    # Dynamo rewrites addcmul_ and addcdiv_ with a value into Inductor's
    # prims.fma(product, value, self), a Python float as `value`, which no
    # kernel of a device outside Inductor accepts. Kiln takes it apart into a
    # multiply and an add, the two roundings eager addcmul_ makes.
    from torch._inductor import inductor_prims  # noqa: F401  (registers prims.fma)
    table[torch.ops.prims.fma.default] = _fma
    table.update(foreach_decompositions())
    return table


def _fma(a, b, c):
    return a * b + c


def decompositions():
    """The table for aot_autograd (a copy: callers may add to it)."""
    return dict(_table())
