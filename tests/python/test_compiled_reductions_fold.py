"""Compiled folding reductions beyond sum/mean/amax/amin: prod, nansum,
count_nonzero, any and all, differentially against the CPU."""
import pytest
import torch

from differential import ALL, FLOATING, INTEGRAL, check, compiled_only, make, variants

DIMS = [0, 1, -1, (0, 2), ()]


def out_like(dtype):
    return lambda a: torch.empty(0, dtype=dtype, device=a.device)


# The CPU multiplies float16/bfloat16 values in that precision, rounding each
# partial product; kiln multiplies in float32 and rounds once. Both err by up
# to about one rounding per factor.
HALF_EPSILON = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}


def product_tolerance(dtype, factors):
    if dtype not in HALF_EPSILON:
        return None
    return (HALF_EPSILON[dtype] * factors, 1e-5)


@pytest.mark.parametrize("dtype", ALL)
def test_prod(dtype):
    # Values near 1 keep long products finite and comparable.
    for name, x in variants((3, 5, 7), dtype, low=0.5, high=1.5):
        compiled_only(lambda: check(torch.prod, x, message=f"{name} all",
                                    tolerance=product_tolerance(dtype, x.numel())))
        for dim in [0, -1]:
            for keepdim in [False, True]:
                factors = x.shape[dim] if x.dim() else 1
                compiled_only(lambda: check(torch.prod, x, dim, keepdim=keepdim,
                                            message=f"{name} {dim} {keepdim}",
                                            tolerance=product_tolerance(dtype, factors)))


def test_prod_dtype_and_out():
    x = make((4, 9), torch.float16, low=0.5, high=1.5)
    check(torch.prod, x, dtype=torch.float32)
    check(torch.prod, x, 1, dtype=torch.float64)
    check(torch.prod, make((4, 9), torch.int32, low=-2, high=2), 0)
    check(lambda a: torch.prod(a, 1, out=out_like(torch.float16)(a)), x,
          tolerance=product_tolerance(torch.float16, 9))
    check(lambda a: torch.prod(a, 1, dtype=torch.float32, out=out_like(torch.float64)(a)), x,
          message="dtype and out= disagree")
    check(lambda a: torch.prod(a, 2), x, message="dim out of range")
    check(torch.prod, make((0, 3), torch.float32), 0, message="empty product is 1")
    check(torch.prod, make((3,), torch.int64, low=1000, high=2000), message="integer overflow wraps")


@pytest.mark.parametrize("dtype", FLOATING)
def test_nansum(dtype):
    x = make((6, 33), dtype)
    x[1, 3] = float("nan")
    x[4, :] = float("nan")
    compiled_only(lambda: check(torch.nansum, x))
    for dim in [0, 1, (0, 1)]:
        compiled_only(lambda: check(torch.nansum, x, dim, keepdim=True, message=f"{dim}"))
    check(torch.nansum, x.t(), 1, message="transposed")
    check(torch.nansum, make((0, 4), dtype), 0, message="empty")
    check(torch.nansum, x[0, 0], message="0-dim")


def test_nansum_integers_dtype_and_out():
    for dtype in INTEGRAL + [torch.bool]:
        compiled_only(lambda: check(torch.nansum, make((5, 7), dtype), 1))
    x = make((5, 7), torch.float32)
    x[0, 0] = float("nan")
    check(torch.nansum, x, 1, dtype=torch.float64)
    check(lambda a: torch.nansum(a, 0, out=out_like(torch.float32)(a)), x)
    check(lambda a: torch.nansum(a, 0, dtype=torch.float32, out=out_like(torch.float64)(a)), x,
          message="dtype and out= disagree")


@pytest.mark.parametrize("dtype", ALL)
def test_count_nonzero(dtype):
    for name, x in variants((4, 6, 5), dtype, low=-1, high=1):
        compiled_only(lambda: check(torch.count_nonzero, x, message=name))
        if x.dim() == 3:
            for dims in [0, -1, (0, 2)]:
                compiled_only(lambda: check(torch.count_nonzero, x, dims, message=f"{name} {dims}"))
    check(torch.count_nonzero, make((3, 3), dtype), (0, 0), message="repeated dim")


@pytest.mark.parametrize("dtype", ALL + [torch.uint8])
@pytest.mark.parametrize("op", [torch.any, torch.all], ids=["any", "all"])
def test_any_all(op, dtype):
    for name, x in variants((4, 5, 6), dtype, low=0, high=1.6):
        compiled_only(lambda: check(op, x, message=f"{name} all"))
        for dims in DIMS:
            if x.dim() == 0 and dims not in [0, -1, ()]:
                continue
            for keepdim in [False, True]:
                compiled_only(lambda: check(op, x, dims, keepdim=keepdim,
                                            message=f"{name} {dims} {keepdim}"))


@pytest.mark.parametrize("op", [torch.any, torch.all], ids=["any", "all"])
def test_any_all_values_and_out(op):
    x = torch.tensor([[0.0, float("nan"), 0.5], [0.0, 0.0, -0.0], [1.0, 2.0, 3.0]])
    for dim in [0, 1]:
        check(op, x, dim)
    check(op, x.to(torch.uint8), 1, message="uint8 keeps uint8")
    check(lambda a: op(a, 1, out=out_like(torch.uint8)(a)), x, message="uint8 out= of floats")
    check(lambda a: op(a, out=out_like(torch.uint8)(a)), x, message="full, uint8 out=")
    check(lambda a: op(a, (0, 1), out=out_like(torch.bool)(a)), x)
    check(lambda a: op(a, 0, out=out_like(torch.int64)(a)), x, message="int64 out= is an error")
    check(op, make((0, 3), torch.float32), 0, message="empty")
    check(op, make((0, 3), torch.float32), 1, message="empty output")
    check(op, torch.tensor([[2.5]]), 1, message="one element")


def test_large_any_all_and_prod_use_threads():
    x = make((600, 1000), torch.float32, low=0.999, high=1.001)
    check(torch.prod, x, 1, tolerance=(1e-5, 1e-6))
    check(torch.prod, x.t(), 1, tolerance=(1e-5, 1e-6))
    big = torch.zeros(1 << 20)
    big[777_777] = 1
    check(torch.any, big)
    check(torch.all, big)
    check(torch.any, big.to(torch.uint8), message="split reduction into uint8")
    check(torch.all, (big + 1).to(torch.uint8), message="split reduction into uint8")
    check(torch.count_nonzero, big)
    ones = torch.ones(1 << 20, dtype=torch.int32)
    check(torch.prod, ones)
    nan = make((1 << 20,), torch.float32)
    nan[1234] = float("nan")
    check(torch.nansum, nan, tolerance=(1e-4, 1e-2))
