"""Compiled topk, kthvalue, median, nanmedian and mode (row kernels that pick
the same element and index as the CPU among ties), differentially against the
CPU, with their backward."""
import pytest
import torch

from differential import FLOATING, check, compiled_only, make, variants

SELECTABLE = FLOATING + [torch.int64, torch.int32, torch.uint8]


def few_values(shape, dtype, nans=False):
    """Few distinct values, so rows have many ties (and NaNs when asked)."""
    x = torch.randint(0, 4, shape).to(dtype)
    if nans and dtype.is_floating_point and x.numel() >= 3:
        x.view(-1)[::3] = float("nan")
    return x


def inputs(dtype):
    for name, x in variants((5, 13, 6), dtype, low=-2, high=2):
        yield name, x
    for nans in (False, True):
        yield f"ties nans={nans}", few_values((4, 150, 3), dtype, nans)


@pytest.mark.parametrize("dtype", SELECTABLE)
def test_topk(dtype):
    for name, x in inputs(dtype):
        for dim in ([0, 1, -1] if x.dim() else [0]):
            length = x.shape[dim] if x.dim() else 1
            for k in sorted({0, 1, length // 2, length} if x.numel() else {0}):
                for largest in (True, False):
                    for sorted_ in (True, False):
                        compiled_only(lambda: check(torch.topk, x, k, dim, largest, sorted_,
                                                    message=f"{name} {dim} {k} {largest} {sorted_}"))


@pytest.mark.parametrize("dtype", SELECTABLE)
def test_kthvalue_median_mode(dtype):
    for name, x in inputs(dtype):
        if x.numel() == 0:
            continue
        for dim in ([0, 1, -1] if x.dim() else [0]):
            length = x.shape[dim] if x.dim() else 1
            for keepdim in (False, True):
                for k in sorted({1, (length + 1) // 2, length}):
                    compiled_only(lambda: check(torch.kthvalue, x, k, dim, keepdim, message=f"{name} {dim} {k}"))
                for op in (torch.median, torch.nanmedian, torch.mode):
                    compiled_only(lambda: check(op, x, dim, keepdim, message=f"{op.__name__} {name} {dim}"))
        compiled_only(lambda: check(torch.median, x, message=name))
        compiled_only(lambda: check(torch.nanmedian, x, message=name))


def test_errors_and_edge_cases():
    check(torch.mode, make((4, 5), torch.bool), 1)
    check(torch.topk, make((4, 5), torch.bool), 2)
    check(torch.kthvalue, make((4, 5), torch.bool), 2)
    check(torch.median, make((4, 5), torch.bool), 1)
    check(torch.topk, make((4, 5), torch.float32), 6)
    check(torch.kthvalue, make((4, 5), torch.float32), 6, 1)
    check(torch.kthvalue, make((4, 5), torch.float32), 0, 1)
    check(torch.median, make((0, 5), torch.float32), 0)
    check(torch.mode, make((0, 5), torch.float32), 1)
    check(torch.median, make((0,), torch.float32))
    check(torch.nanmedian, torch.full((3, 4), float("nan")), 1)

    def topk_out(a):
        values = torch.empty(0, dtype=a.dtype, device=a.device)
        indices = torch.empty(0, dtype=torch.long, device=a.device)
        torch.topk(a, 3, 1, out=(values, indices))
        return values, indices

    def median_out(a):
        values = torch.empty(0, dtype=a.dtype, device=a.device)
        indices = torch.empty(0, dtype=torch.long, device=a.device)
        torch.median(a, 0, out=(values, indices))
        return values, indices
    compiled_only(lambda: check(topk_out, make((4, 7), torch.float32)))
    compiled_only(lambda: check(median_out, make((4, 7), torch.float32)))


@pytest.mark.parametrize("op", ["topk", "kthvalue", "median", "mode"])
def test_backward(op):
    functions = {
        "topk": lambda a: torch.topk(a, 3, 1)[0],
        "kthvalue": lambda a: torch.kthvalue(a, 2, 1)[0],
        "median": lambda a: torch.median(a, 1)[0],
        "mode": lambda a: torch.mode(a, 1)[0],
    }
    x = make((4, 6), torch.float64).requires_grad_()
    kiln = x.detach().to("kiln").requires_grad_()
    expected = functions[op](x)
    actual = functions[op](kiln)
    weights = torch.arange(1.0, 1.0 + expected.numel(), dtype=torch.float64).view(expected.shape)
    expected.backward(weights)
    actual.backward(weights.to("kiln"))
    torch.testing.assert_close(kiln.grad.cpu(), x.grad)
