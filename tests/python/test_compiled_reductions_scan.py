"""Compiled cumsum and cumprod (log-step scans of pointwise kernels),
differentially against the CPU."""
import pytest
import torch

from differential import ALL, FLOATING, check, compiled_only, make, variants


def out_like(dtype):
    return lambda a: torch.empty(0, dtype=dtype, device=a.device)


# The CPU multiplies half-precision values in float32 but rounds every partial
# product; kiln rounds once. Both err by about one rounding per factor.
HALF_EPSILON = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}


def product_tolerance(dtype, factors):
    if dtype not in HALF_EPSILON:
        return None
    return (HALF_EPSILON[dtype] * factors, 1e-5)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", [torch.cumsum, torch.cumprod], ids=["cumsum", "cumprod"])
def test_scans(op, dtype):
    low, high = (0.6, 1.4) if op is torch.cumprod else (-3, 3)
    for name, x in variants((5, 13, 6), dtype, low=low, high=high):
        for dim in ([0, 1, -1] if x.dim() else [0, -1]):
            length = x.shape[dim] if x.dim() else 1
            tolerance = product_tolerance(dtype, length) if op is torch.cumprod else None
            compiled_only(lambda: check(op, x, dim, message=f"{name} {dim}", tolerance=tolerance))


@pytest.mark.parametrize("op", [torch.cumsum, torch.cumprod], ids=["cumsum", "cumprod"])
def test_scan_dtype_out_and_in_place(op):
    x = make((4, 9), torch.float32, low=0.6, high=1.4)
    check(op, x, 1, dtype=torch.float64)
    check(op, x.half(), 0, dtype=torch.float32)
    check(op, make((4, 9), torch.int32), 1, message="integers promote to int64")
    check(op, make((4, 9), torch.int32), 1, dtype=torch.int32, message="int32 wraps")
    check(op, make((4, 9), torch.bool), 1)
    check(lambda a: op(a, 1, out=out_like(torch.float32)(a)), x)
    check(lambda a: op(a, 1, out=out_like(torch.float64)(a)), x, message="out= dtype decides")
    check(lambda a: op(a, 1, dtype=torch.float32, out=out_like(torch.float64)(a)), x,
          message="dtype and out= disagree")
    check(lambda a: op(a, 2), x, message="dim out of range")
    for length in [1, 2, 3, 9]:
        y = x[:, :length]
        in_place = getattr(torch.Tensor, op.__name__ + "_")
        compiled_only(lambda: check(lambda a: in_place(a.clone(), 1), y, message=f"in place {length}"))
    check(lambda a: getattr(a.clone(), op.__name__ + "_")(1, dtype=torch.float64), x,
          message="in place with another dtype is an error")
    check(lambda a: op(a.t(), 0), x, message="transposed")


def test_scan_special_values():
    x = torch.tensor([[1.0, float("nan"), 2.0, 3.0], [1.0, float("inf"), -float("inf"), 0.0],
                      [0.0, 5.0, float("inf"), 2.0]])
    for op in [torch.cumsum, torch.cumprod]:
        check(op, x, 1)
        check(op, x, 0)
        check(op, make((0, 3), torch.float32), 0, message="empty")
        check(op, torch.tensor(2.5), 0, message="0-dim")


@pytest.mark.parametrize("dtype", FLOATING)
def test_scan_backward(dtype):
    x = make((3, 7), torch.float64, low=0.5, high=1.5)
    for op in [torch.cumsum, torch.cumprod]:
        expected_input = x.clone().requires_grad_()
        op(expected_input, 1).sum().backward()
        actual_input = x.to("kiln").requires_grad_()
        op(actual_input, 1).sum().backward()
        torch.testing.assert_close(actual_input.grad.cpu(), expected_input.grad)


def test_long_and_large_scans():
    # Rows of 3000 take 12 steps; 600 rows split over threads. Sums of
    # float32 accumulate in float64 like the CPU's.
    x = make((600, 3000), torch.float32)
    check(torch.cumsum, x, 1)
    check(torch.cumsum, x.t(), 0)
    check(torch.cumsum, make((1 << 20,), torch.float32), 0, tolerance=(1e-6, 1e-4))
    check(torch.cumsum, make((1 << 20,), torch.int64, low=-100, high=100), 0)
    check(torch.cumprod, make((600, 500), torch.float64, low=0.99, high=1.01), 1)
