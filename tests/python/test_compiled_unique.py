"""Compiled unique (_unique2), unique_consecutive and isin, differentially
against the CPU (values, inverse and counts, NaN handling)."""
import pytest
import torch

from differential import FLOATING, check, compiled_only

UNIQUE_DTYPES = FLOATING + [torch.int64, torch.uint8, torch.bool]


def few_values(shape, dtype, nans=True):
    x = torch.randint(0, 4, shape).to(dtype)
    if nans and dtype.is_floating_point and x.numel() > 3:
        x.view(-1)[::5] = float("nan")
    return x


@pytest.mark.parametrize("dtype", UNIQUE_DTYPES)
def test_unique(dtype):
    for shape in [(5, 7), (40,), (), (0, 3), (3, 4, 5)]:
        x = few_values(shape, dtype)
        for inverse in (False, True):
            for counts in (False, True):
                options = dict(return_inverse=inverse, return_counts=counts)
                compiled_only(lambda: check(torch.unique, x, **options, message=f"{shape}"))
                compiled_only(lambda: check(torch.unique, x, sorted=False, **options))
                compiled_only(lambda: check(torch.unique_consecutive, x, **options, message=f"{shape}"))
                if x.dim() >= 2 and x.numel():
                    for dim in range(x.dim()):
                        compiled_only(lambda: check(torch.unique_consecutive, x, dim=dim, **options,
                                                    message=f"{shape} dim={dim}"))
    check(torch.unique_consecutive, few_values((3, 0), dtype), dim=0)


def test_unique_rows_with_runs():
    x = torch.tensor([[1, 2], [1, 2], [0, 1], [0, 1], [1, 2]])
    compiled_only(lambda: check(torch.unique_consecutive, x, dim=0, return_counts=True, return_inverse=True))
    compiled_only(lambda: check(torch.unique_consecutive, x.t(), dim=1, return_counts=True))
    check(torch.unique, torch.ones(3, dtype=torch.complex64))


@pytest.mark.parametrize("dtype", FLOATING + [torch.int64, torch.uint8])
def test_isin(dtype):
    for shape in [(5, 7), (), (0,), (3, 4, 5)]:
        x = few_values(shape, dtype)
        tests = few_values((7,), dtype)
        for invert in (False, True):
            compiled_only(lambda: check(torch.isin, x, tests, invert=invert, message=f"{shape}"))
            compiled_only(lambda: check(torch.isin, x, 2, invert=invert))
            compiled_only(lambda: check(lambda t: torch.isin(2, t, invert=invert), tests))
            compiled_only(lambda: check(torch.isin, x, tests[:0], invert=invert))
    compiled_only(lambda: check(torch.isin, torch.tensor([2, 3]), 2.5))
    compiled_only(lambda: check(torch.isin, torch.tensor([2, 3]), torch.tensor([2.5, 3.0])))
    compiled_only(lambda: check(torch.isin, few_values((4, 6), dtype).t(), few_values((9,), dtype)))
    check(torch.isin, torch.tensor([True, False]), torch.tensor([True]))

    def out_form(a, b):
        out = torch.empty(0, dtype=torch.bool, device=a.device)
        return torch.isin(a, b, out=out)
    compiled_only(lambda: check(out_form, few_values((4, 5), dtype), few_values((6,), dtype)))


@pytest.mark.parametrize("dtype", FLOATING + [torch.int64, torch.bool])
def test_nonzero_static(dtype):
    x = few_values((3, 4, 5), dtype)
    for source in (x, x.transpose(0, 2), x[0, 0, 0], x[:0]):
        for size, fill in [(4, -1), (1, 7), (0, -1), (100, 3)]:
            compiled_only(lambda: check(torch.nonzero_static, source, size=size, fill_value=fill))
    check(torch.nonzero_static, x, size=-1)
    check(lambda a: torch.nonzero_static(a.expand(3, 4), size=5), torch.tensor([[0.0], [1.0], [0.0]]))


def test_combinations():
    for r, replacement in [(2, False), (2, True), (3, False)]:
        compiled_only(lambda: check(torch.combinations, torch.arange(5.0), r, replacement))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_repeat_interleave(dtype):
    repeats = torch.tensor([1, 0, 3, 2], dtype=dtype)
    compiled_only(lambda: check(torch.repeat_interleave, repeats))
    compiled_only(lambda: check(torch.repeat_interleave, repeats[:0]))
    compiled_only(lambda: check(lambda r: torch.repeat_interleave(r, output_size=6), repeats))
    x = few_values((4, 3), torch.float32)
    compiled_only(lambda: check(torch.repeat_interleave, x, repeats, 0))
    compiled_only(lambda: check(torch.repeat_interleave, x.t(), repeats[:3].long(), 1))
    compiled_only(lambda: check(torch.repeat_interleave, x, 2))
    check(torch.repeat_interleave, repeats.view(2, 2))
    check(torch.repeat_interleave, repeats.float())
    check(torch.repeat_interleave, -repeats - 1)
    check(lambda r: torch.repeat_interleave(r, output_size=2), repeats)
