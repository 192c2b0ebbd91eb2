"""Compiled searchsorted and bucketize (binary-search row kernels),
differentially against the CPU."""
import pytest
import torch

from differential import FLOATING, check, compiled_only

SEARCHABLE = FLOATING + [torch.int64, torch.int32, torch.uint8]


def values_and_boundaries(dtype):
    boundaries = torch.randint(0, 10, (3, 4, 9)).to(dtype).sort(-1).values
    values = torch.randint(-1, 11, (3, 4, 5)).to(dtype)
    if dtype.is_floating_point:
        values.view(-1)[::7] = float("nan")
    return values, boundaries


@pytest.mark.parametrize("dtype", SEARCHABLE)
def test_searchsorted(dtype):
    values, boundaries = values_and_boundaries(dtype)
    for right in (False, True):
        for out_int32 in (False, True):
            options = dict(right=right, out_int32=out_int32)
            compiled_only(lambda: check(torch.searchsorted, boundaries, values, **options))
            compiled_only(lambda: check(torch.searchsorted, boundaries[0, 0], values, **options))
            compiled_only(lambda: check(torch.searchsorted, boundaries[0, 0], values[0, 0, 0], **options))
            compiled_only(lambda: check(torch.searchsorted, boundaries[0, 0], values[:0], **options))
            compiled_only(lambda: check(torch.bucketize, values, boundaries[0, 0], **options))
            compiled_only(lambda: check(torch.bucketize, values.transpose(0, 2), boundaries[1, 1], **options))
    compiled_only(lambda: check(lambda b: torch.searchsorted(b, 3, side="right"), boundaries[0, 0]))
    compiled_only(lambda: check(lambda b: torch.bucketize(4, b), boundaries[0, 0]))
    compiled_only(lambda: check(torch.searchsorted, boundaries.transpose(0, 1), values.transpose(0, 1)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_searchsorted_sorter_mixed_and_out(dtype):
    values, _ = values_and_boundaries(dtype)
    unsorted = torch.randint(0, 10, (3, 4, 9)).to(dtype)
    sorter = unsorted.argsort(-1)
    for side in ("left", "right"):
        check(torch.searchsorted, unsorted, values, sorter=sorter, side=side)
        check(torch.searchsorted, unsorted[0, 0], values, sorter=sorter[0, 0], side=side)
    compiled_only(lambda: check(torch.searchsorted, unsorted.sort(-1).values, values.double()))

    def out_form(b, v):
        out = torch.empty(0, dtype=torch.int32, device=v.device)
        return torch.searchsorted(b, v, out_int32=True, out=out)
    compiled_only(lambda: check(out_form, unsorted.sort(-1).values, values))


def test_errors():
    values, boundaries = values_and_boundaries(torch.float32)
    check(torch.searchsorted, boundaries.bool(), values.bool())
    check(torch.searchsorted, boundaries[:, :2], values)
    check(torch.searchsorted, boundaries, values, side="middle")
    check(torch.searchsorted, boundaries, values, side="left", right=True)
    check(torch.bucketize, values, boundaries)
    check(torch.searchsorted, boundaries, values, sorter=boundaries.long() + 20)
