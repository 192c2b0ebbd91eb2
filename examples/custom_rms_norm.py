"""A fused RMSNorm for the kiln device, forward and backward, written two ways
(docs/guides/custom_kernels.md): as custom kernels in C
(torch_kiln.kernels.CKernel) registered with torch.library.custom_op, and in
Kiln's kernel language (torch_kiln.kernels.kernel), where Kiln derives the
backward and fuses the loops itself.

    y = x * rsqrt(mean(x ** 2, dim=-1) + eps) * weight

The composite form is six eager ops forward (pow, mean, add, rsqrt, mul, mul)
and more backward, each a pass over the tensor; here the forward is one pass
that writes y and the per-row rsqrt, and the backward two kernels: the input
gradient row by row, the weight gradient in blocks of columns.

Run it to check it against the composite on the CPU and time both on kiln:

    python examples/custom_rms_norm.py
"""
import time

import torch
import torch_kiln  # noqa: F401  (the kiln device; import torch alone loads it too)
from torch_kiln.kernels import CKernel, kernel

# Operands: x [rows, n] (rows contiguous), weight [n] broadcast over the rows,
# then the outputs y [rows, n] and rstd [rows, 1]. One position is one row.
# scalar_t is the element type, acc_t the type the sum of squares is kept in.
_FORWARD = CKernel(r"""
KILN_KERNEL(rms_norm_forward) {
  const int64_t n = KILN_SIZE(0);
  const double eps = KILN_REAL(0);
  const scalar_t* weight = KILN_DATA(1, const scalar_t);
  for (int64_t row = begin; row < end; ++row) {
    const scalar_t* x = KILN_DATA(0, const scalar_t) + row * KILN_STRIDE(0, 1);
    scalar_t* y = KILN_DATA(2, scalar_t) + row * KILN_STRIDE(2, 1);
    /* 16 partial sums, so the compiler vectorises the loop without
       reassociating one long sum. */
    acc_t partial[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      for (int lane = 0; lane < 16; ++lane) partial[lane] += (acc_t)x[i + lane] * x[i + lane];
    acc_t sum = 0;
    for (int lane = 0; lane < 16; ++lane) sum += partial[lane];
    for (; i < n; ++i) sum += (acc_t)x[i] * x[i];
    const acc_t rstd = (acc_t)1 / sqrt((double)sum / (double)n + eps);
    for (int64_t j = 0; j < n; ++j) y[j] = (scalar_t)(x[j] * rstd * weight[j]);
    KILN_DATA(3, scalar_t)[row * KILN_STRIDE(3, 1)] = (scalar_t)rstd;
  }
}
""", name="kiln_examples::rms_norm_forward")

# Operands: x, weight, rstd [rows, 1], grad_y, then grad_x. One position is one row:
#   grad_x = rstd * (grad_y * weight - x * rstd^2 * mean(grad_y * weight * x))
_BACKWARD_INPUT = CKernel(r"""
KILN_KERNEL(rms_norm_backward_input) {
  const int64_t n = KILN_SIZE(0);
  const scalar_t* weight = KILN_DATA(1, const scalar_t);
  for (int64_t row = begin; row < end; ++row) {
    const scalar_t* x = KILN_DATA(0, const scalar_t) + row * KILN_STRIDE(0, 1);
    const acc_t rstd = KILN_DATA(2, const scalar_t)[row * KILN_STRIDE(2, 1)];
    const scalar_t* grad_y = KILN_DATA(3, const scalar_t) + row * KILN_STRIDE(3, 1);
    scalar_t* grad_x = KILN_DATA(4, scalar_t) + row * KILN_STRIDE(4, 1);
    acc_t partial[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      for (int lane = 0; lane < 16; ++lane)
        partial[lane] += (acc_t)grad_y[i + lane] * weight[i + lane] * x[i + lane];
    acc_t dot = 0;
    for (int lane = 0; lane < 16; ++lane) dot += partial[lane];
    for (; i < n; ++i) dot += (acc_t)grad_y[i] * weight[i] * x[i];
    const acc_t scale = rstd * rstd * dot / (acc_t)n;
    for (int64_t j = 0; j < n; ++j)
      grad_x[j] = (scalar_t)(rstd * ((acc_t)grad_y[j] * weight[j] - x[j] * scale));
  }
}
""", name="kiln_examples::rms_norm_backward_input")

# Operands: x, rstd, grad_y, then grad_weight [n] (broadcast over the rows).
# One position is a block of 64 columns, summed over every row in double.
_BACKWARD_WEIGHT = CKernel(r"""
#define COLUMNS 64
KILN_KERNEL(rms_norm_backward_weight) {
  const int64_t n = KILN_SIZE(0), rows = KILN_SIZE(1);
  for (int64_t block = begin; block < end; ++block) {
    const int64_t first = block * COLUMNS;
    const int64_t count = n - first < COLUMNS ? n - first : COLUMNS;
    double sum[COLUMNS] = {0};
    for (int64_t row = 0; row < rows; ++row) {
      const scalar_t* x = KILN_DATA(0, const scalar_t) + row * KILN_STRIDE(0, 1) + first;
      const double rstd = KILN_DATA(1, const scalar_t)[row * KILN_STRIDE(1, 1)];
      const scalar_t* grad_y = KILN_DATA(2, const scalar_t) + row * KILN_STRIDE(2, 1) + first;
      for (int64_t j = 0; j < count; ++j) sum[j] += (double)grad_y[j] * x[j] * rstd;
    }
    scalar_t* grad_weight = KILN_DATA(3, scalar_t) + first;
    for (int64_t j = 0; j < count; ++j) grad_weight[j] = (scalar_t)sum[j];
  }
}
""", name="kiln_examples::rms_norm_backward_weight")

_TYPES = {torch.float32: ("float", "float"), torch.float64: ("double", "double")}


def _variants(kernel, operands):
    return {dtype: kernel.variant(scalar_t=c_type, acc_t=acc_type, dtypes=[dtype] * operands)
            for dtype, (c_type, acc_type) in _TYPES.items()}


_FORWARD_KERNELS = _variants(_FORWARD, 4)
_BACKWARD_INPUT_KERNELS = _variants(_BACKWARD_INPUT, 5)
_BACKWARD_WEIGHT_KERNELS = _variants(_BACKWARD_WEIGHT, 4)


def _check(x, weight):
    torch._check(x.dtype in _TYPES, lambda: f"rms_norm: kiln's kernel takes float32 and float64, not {x.dtype}")
    torch._check(weight.dtype == x.dtype, lambda: f"rms_norm: weight is {weight.dtype}, x is {x.dtype}")
    torch._check(x.dim() >= 1 and weight.shape == x.shape[-1:],
                 lambda: f"rms_norm: weight of shape {list(weight.shape)} does not match x's last dim "
                         f"(x has shape {list(x.shape)})")


@torch.library.custom_op("kiln_examples::rms_norm_forward", mutates_args=(), device_types="kiln")
def rms_norm_forward(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """y and the per-row rsqrt(mean(x^2) + eps), of shape x.shape[:-1] + (1,)."""
    _check(x, weight)
    n = x.shape[-1]
    rows = x.reshape(-1, n).contiguous()
    y = torch.empty_like(rows)
    rstd = torch.empty(rows.shape[0], 1, dtype=x.dtype, device=x.device)
    _FORWARD_KERNELS[x.dtype](inputs=[rows, weight.contiguous()], outputs=[y, rstd], scalars=[float(eps)])
    return y.view(x.shape), rstd.view(*x.shape[:-1], 1)


@rms_norm_forward.register_fake
def _(x, weight, eps):
    _check(x, weight)
    return torch.empty_like(x, memory_format=torch.contiguous_format), x.new_empty(*x.shape[:-1], 1)


@torch.library.custom_op("kiln_examples::rms_norm_backward", mutates_args=(), device_types="kiln")
def rms_norm_backward(grad_y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                      rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients of x and weight."""
    _check(x, weight)
    n = x.shape[-1]
    rows = x.reshape(-1, n).contiguous()
    grad_rows = grad_y.reshape(-1, n).contiguous()
    rstd_rows = rstd.reshape(-1, 1).contiguous()
    grad_x = torch.empty_like(rows)
    grad_weight = torch.empty(n, dtype=x.dtype, device=x.device)
    _BACKWARD_INPUT_KERNELS[x.dtype](inputs=[rows, weight.contiguous(), rstd_rows, grad_rows], outputs=[grad_x])
    if rows.shape[0] == 0:  # an empty launch shape calls no kernel: the sum over no rows is 0
        return grad_x.view(x.shape), grad_weight.zero_()
    blocks = (n + 63) // 64
    _BACKWARD_WEIGHT_KERNELS[x.dtype](inputs=[rows, rstd_rows, grad_rows], outputs=[grad_weight],
                                      shape=rows.shape, positions=blocks, cost_per_position=64 * rows.shape[0])
    return grad_x.view(x.shape), grad_weight


@rms_norm_backward.register_fake
def _(grad_y, x, weight, rstd):
    return torch.empty_like(x, memory_format=torch.contiguous_format), torch.empty_like(weight)


# The same ops on the CPU, as PyTorch ops: a reference for tests, and the model
# runs on either device.
@rms_norm_forward.register_kernel("cpu")
def _(x, weight, eps):
    _check(x, weight)
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return x * rstd * weight, rstd


@rms_norm_backward.register_kernel("cpu")
def _(grad_y, x, weight, rstd):
    _check(x, weight)
    grad_weighted = grad_y * weight
    dot = (grad_weighted * x).mean(-1, keepdim=True)
    grad_x = rstd * (grad_weighted - x * rstd * rstd * dot)
    grad_weight = (grad_y * x * rstd).reshape(-1, x.shape[-1]).sum(0)
    return grad_x, grad_weight


def _setup_context(ctx, inputs, output):
    x, weight, _ = inputs
    ctx.save_for_backward(x, weight, output[1])


def _backward(ctx, grad_y, grad_rstd):
    x, weight, rstd = ctx.saved_tensors
    grad_x, grad_weight = rms_norm_backward(grad_y, x, weight, rstd)
    return grad_x, grad_weight, None


rms_norm_forward.register_autograd(_backward, setup_context=_setup_context)


def rms_norm(x, weight, eps=1e-6):
    """The fused RMSNorm on kiln."""
    return rms_norm_forward(x, weight, eps)[0]


def rms_norm_composite(x, weight, eps=1e-6):
    """The same, as PyTorch ops (what models write)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


@kernel(name="kiln_examples::rms_norm_kernel_language")
def rms_norm_kernel_language(x, weight, eps: float = 1e-6):
    """The composite's body in the kernel language: one row kernel forward,
    the body's vector-Jacobian product fused backward."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _time(function, steps=20):
    function()
    torch.kiln.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        function()
    torch.kiln.synchronize()
    return (time.perf_counter() - start) / steps


def main():
    torch.manual_seed(0)
    x_cpu = torch.randn(2048, 1024, requires_grad=True)
    w_cpu = torch.randn(1024, requires_grad=True)
    rms_norm_composite(x_cpu, w_cpu).square().sum().backward()
    x = x_cpu.detach().to("kiln").requires_grad_()
    w = w_cpu.detach().to("kiln").requires_grad_()
    y = rms_norm(x, w)
    y.square().sum().backward()
    y_cpu = rms_norm_composite(x_cpu, w_cpu)
    print("forward matches the CPU:", torch.allclose(y.cpu(), y_cpu, rtol=1e-5, atol=1e-5))
    print("gradients match the CPU:", torch.allclose(x.grad.cpu(), x_cpu.grad, rtol=1e-4, atol=1e-4)
          and torch.allclose(w.grad.cpu(), w_cpu.grad, rtol=1e-4, atol=1e-3))
    y_language = rms_norm_kernel_language(x.detach(), w.detach())
    print("kernel language matches the CPU:", torch.allclose(y_language.cpu(), y_cpu, rtol=1e-5, atol=1e-5))
    for label, function in (("C kernels", rms_norm), ("kernel language", rms_norm_kernel_language),
                            ("composite", rms_norm_composite)):
        seconds = _time(lambda: function(x, w).sum().backward())
        print(f"{label:15s} forward+backward on kiln: {seconds * 1e3:.2f} ms")
    print("ops:", {op: paths for op, paths in torch_kiln.get_executed_ops().items() if "custom" in paths})


if __name__ == "__main__":
    main()
