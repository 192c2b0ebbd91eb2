"""Compiled max, min, argmax, argmin and aminmax, differentially against the
CPU: values with indices, first index among ties, NaN, empty inputs."""
import pytest
import torch

from differential import FLOATING, INTEGRAL, check, compiled_only, make, variants

ORDERED = FLOATING + INTEGRAL + [torch.int16, torch.int8, torch.uint8]


def out_like(dtype):
    return lambda a: torch.empty(0, dtype=dtype, device=a.device)


def ties(shape, dtype):
    """Few distinct values, so most rows have tied extremes."""
    return make(shape, dtype, low=0, high=3).round().to(dtype)


@pytest.mark.parametrize("dtype", ORDERED + [torch.bool])
@pytest.mark.parametrize("op", [torch.max, torch.min], ids=["max", "min"])
def test_max_min(op, dtype):
    values = make if dtype == torch.bool else ties
    for name, x in variants((5, 7, 6), dtype):
        x = values(tuple(x.shape), dtype) if x.dim() else x
        if x.numel() == 0:
            check(op, x, message=f"{name}: empty reduction raises")
            check(op, x, 0, message=f"{name}: empty dim raises")
            check(op, x, 1, message=f"{name}: empty output")
            continue
        compiled_only(lambda: check(op, x, message=f"{name} all"))
        for dim in ([0, 1, -1] if x.dim() else [0, -1]):
            for keepdim in [False, True]:
                compiled_only(lambda: check(op, x, dim, keepdim, message=f"{name} {dim} {keepdim}"))
    strided = values((6, 9), dtype).t()
    check(op, strided, 1, message="transposed")
    check(op, values((6, 18), dtype)[:, ::2], 0, message="sliced")


@pytest.mark.parametrize("op", [torch.max, torch.min], ids=["max", "min"])
def test_max_min_out(op):
    x = ties((4, 9), torch.float32)
    check(lambda a: op(a, 1, out=(out_like(torch.float32)(a), out_like(torch.int64)(a))), x)
    check(lambda a: op(a, 1, True, out=(out_like(torch.float32)(a), out_like(torch.int64)(a))), x)
    check(lambda a: op(a, 1, out=(out_like(torch.float64)(a), out_like(torch.int64)(a))), x,
          message="values dtype must match")
    check(lambda a: op(a, 1, out=(out_like(torch.float32)(a), out_like(torch.float32)(a))), x,
          message="indices must be int64")
    check(lambda a: op(a, out=out_like(torch.float64)(a)), x, message="full, wider out=")
    check(lambda a: op(a, out=out_like(torch.int64)(a)), x, message="full, narrowing out=")
    check(lambda a: op(a, 2), x, message="dim out of range")


@pytest.mark.parametrize("dtype", ORDERED)
@pytest.mark.parametrize("op", [torch.argmax, torch.argmin], ids=["argmax", "argmin"])
def test_argmax_argmin(op, dtype):
    for name, x in variants((5, 7, 6), dtype):
        x = ties(tuple(x.shape), dtype) if x.dim() else x
        if x.numel() == 0:
            check(op, x, message=f"{name}: no dim raises")
            check(op, x, 0, message=f"{name}: empty dim raises")
            check(op, x, 1, message=f"{name}: empty output")
            continue
        compiled_only(lambda: check(op, x, message=f"{name} flattened"))
        compiled_only(lambda: check(op, x, None, True, message=f"{name} flattened keepdim"))
        for dim in ([0, 1, -1] if x.dim() else [0, -1]):
            for keepdim in [False, True]:
                compiled_only(lambda: check(op, x, dim, keepdim, message=f"{name} {dim} {keepdim}"))


@pytest.mark.parametrize("op", [torch.argmax, torch.argmin], ids=["argmax", "argmin"])
def test_argmax_flattens_in_logical_order(op):
    # The extreme value appears twice; the first in row-major order must win
    # whatever the memory order.
    x = torch.zeros(4, 5, 6)
    x[1, 2, 3] = x[2, 0, 1] = -7 if op is torch.argmin else 7
    for layout in [x, x.permute(2, 0, 1).contiguous().permute(1, 2, 0), x.transpose(0, 2).contiguous().transpose(0, 2)]:
        compiled_only(lambda: check(op, layout))
        compiled_only(lambda: check(op, layout.transpose(0, 1)))
    check(op, make((3, 3), torch.bool), message="bool is an error")
    check(lambda a: op(a, 1, out=out_like(torch.int64)(a)), x)
    check(lambda a: op(a, out=out_like(torch.int32)(a)), x, message="out= must be int64")
    check(op, x[:, :1], 1, message="size-1 dim")


@pytest.mark.parametrize("dtype", FLOATING)
def test_nan_wins_first_nan_index(dtype):
    x = make((6, 40), dtype)
    x[1, 7] = x[1, 30] = float("nan")
    x[3, 0] = float("nan")
    x[:, 20] = float("nan")
    for op in [torch.max, torch.min]:
        check(op, x)
        check(op, x, 1)
        check(op, x, 0)
        check(op, x.t(), 0, message="transposed")
    for op in [torch.argmax, torch.argmin]:
        check(op, x)
        check(op, x, 1)
        check(op, x, 0)
    check(torch.aminmax, x)
    check(torch.aminmax, x, dim=1)
    inf = torch.tensor([[-float("inf"), float("inf"), 1.0]], dtype=dtype)
    check(torch.max, inf, 1)
    check(torch.min, inf, 1)
    check(torch.argmax, inf)


@pytest.mark.parametrize("dtype", ORDERED + [torch.bool])
def test_aminmax(dtype):
    for name, x in variants((5, 7), dtype):
        if x.numel() == 0:
            check(torch.aminmax, x, message=f"{name}: empty raises")
            check(torch.aminmax, x, dim=0, message=f"{name}: empty dim raises")
            check(torch.aminmax, x, dim=1, message=f"{name}: empty output")
            continue
        compiled_only(lambda: check(torch.aminmax, x, message=name))
        compiled_only(lambda: check(torch.aminmax, x, keepdim=True, message=f"{name} keepdim"))
        compiled_only(lambda: check(torch.aminmax, x, dim=-1, message=f"{name} dim"))
        compiled_only(lambda: check(torch.aminmax, x, dim=0, keepdim=True, message=f"{name} dim"))
    x = make((3, 4), torch.float32)
    check(lambda a: torch.aminmax(a, dim=1, out=(out_like(torch.float32)(a), out_like(torch.float32)(a))), x)
    check(lambda a: torch.aminmax(a, out=(out_like(torch.float64)(a), out_like(torch.float32)(a))), x,
          message="out dtype must match")


def test_large_inputs_use_threads():
    x = make((700, 1000), torch.float32)
    check(torch.max, x, 1)
    check(torch.min, x.t(), 1)
    check(torch.argmax, x, 0)
    check(torch.argmin, x.t(), 0)
    big = make((1 << 20,), torch.float32)
    big[654_321] = 10
    big[900_000] = 10
    check(torch.max, big)
    check(torch.argmax, big)
    check(torch.aminmax, big)
    check(torch.max, big.view(1024, 1024), 0)
