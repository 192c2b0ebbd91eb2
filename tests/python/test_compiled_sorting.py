"""Compiled sort, argsort and msort (row kernels: a stable merge sort, and the
CPU's std::sort order for stable=False), differentially against the CPU:
exact values and indices, NaN order, ties."""
import pytest
import torch

from differential import ALL, check, compiled_only, make, variants

SORTABLE = ALL + [torch.uint8, torch.int8, torch.int16]


def with_ties_and_nans(x):
    """Copies of few distinct values (ties) and, for floats, NaNs and infinities."""
    x = x.clone()
    if x.dtype.is_floating_point and x.numel() >= 4:
        flat = x.view(-1) if x.is_contiguous() else None
        if flat is not None:
            flat[::4] = float("nan")
            flat[1::7] = float("inf")
            flat[2::9] = -float("inf")
    return x


@pytest.mark.parametrize("dtype", SORTABLE)
def test_sort(dtype):
    for name, x in variants((5, 13, 6), dtype, low=-2, high=2):
        x = with_ties_and_nans(x)
        for dim in ([0, 1, -1] if x.dim() else [0, -1]):
            for descending in (False, True):
                compiled_only(lambda: check(torch.sort, x, dim=dim, descending=descending, stable=True,
                                            message=f"{name} {dim} {descending}"))
                # Rows of up to 16 elements: the CPU's unstable sort is stable there too.
                compiled_only(lambda: check(torch.sort, x, dim=dim, descending=descending,
                                            message=f"{name} {dim} {descending} unstable"))
                compiled_only(lambda: check(torch.argsort, x, dim=dim, descending=descending, stable=True))


def test_sort_long_rows_and_out():
    # Rows longer than one insertion-sorted run exercise the merges.
    x = with_ties_and_nans(make((3, 1000), torch.float32))
    for descending in (False, True):
        compiled_only(lambda: check(torch.sort, x, dim=1, descending=descending, stable=True))
    integers = make((1000, 3), torch.int64, low=-3, high=3)
    compiled_only(lambda: check(torch.sort, integers, dim=0, stable=True))
    check(torch.msort, make((7, 4), torch.float64))
    # stable=False reproduces the CPU's std::sort order among ties.
    for dtype in (torch.float16, torch.bool, torch.int64, torch.float32):
        ties = with_ties_and_nans(make((2, 3000), dtype, low=-3, high=3))
        for descending in (False, True):
            compiled_only(lambda: check(torch.sort, ties, dim=1, descending=descending,
                                        message=f"unstable {dtype}"))
    # A row read with stride 0 keeps its input order.
    compiled_only(lambda: check(lambda a: torch.sort(a.expand(3, 40), dim=1), torch.ones(1, 1)))

    def sort_out(a):
        values = torch.empty(0, dtype=a.dtype, device=a.device)
        indices = torch.empty(0, dtype=torch.long, device=a.device)
        torch.sort(a, dim=0, stable=True, out=(values, indices))
        return values, indices
    compiled_only(lambda: check(sort_out, make((6, 5), torch.float32)))
    # More outer dims than a launch passes: run on contiguous copies.
    check(torch.sort, make((2, 2, 2, 2, 2, 2, 2, 3), torch.float32).transpose(0, 7), 3, stable=True)


def test_sort_backward():
    x = make((4, 6), torch.float64).requires_grad_()
    kiln = x.detach().to("kiln").requires_grad_()
    torch.sort(x, 1)[0].mul(torch.arange(6.0, dtype=torch.float64)).sum().backward()
    torch.sort(kiln, 1)[0].mul(torch.arange(6.0, dtype=torch.float64, device="kiln")).sum().backward()
    torch.testing.assert_close(kiln.grad.cpu(), x.grad)
