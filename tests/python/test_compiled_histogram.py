"""Compiled histc (one sequential row kernel), differentially against the
CPU: bin edges, out-of-range and NaN values, the data-chosen range."""
import pytest
import torch

from differential import FLOATING, check, compiled_only, make


@pytest.mark.parametrize("dtype", FLOATING)
def test_histc(dtype):
    # Bins of fewer than 256 elements: the CPU's half-precision counts are exact there.
    for x in (make((200,), dtype, low=-4, high=4), make((7, 9), dtype).t(), make((), dtype)):
        for bins, low, high in [(100, 0, 0), (7, -1, 2), (13, -3.3, 1.7), (1, 0, 0), (50, -2, 2)]:
            compiled_only(lambda: check(torch.histc, x, bins, low, high, message=f"{bins} {low} {high}"))
    with_nan = make((60,), dtype)
    with_nan[::7] = float("nan")
    compiled_only(lambda: check(torch.histc, with_nan, 10, -1, 1))
    edges = torch.tensor([-1.0, 1.0, 0.0, 0.5, -0.5], dtype=dtype)
    compiled_only(lambda: check(torch.histc, edges, 4, -1, 1))
    compiled_only(lambda: check(torch.histc, torch.ones(5, dtype=dtype), 4))
    compiled_only(lambda: check(torch.histc, torch.ones(0, dtype=dtype), 4))


def test_histc_errors_and_out():
    x = make((20,), torch.float32)
    check(torch.histc, x, 0)
    check(torch.histc, x, 10, 2, 1)
    check(torch.histc, torch.tensor([1.0, float("inf")]))
    check(torch.histc, torch.tensor([1.0, float("nan")]))
    check(torch.histc, make((20,), torch.int64))

    def out_form(a):
        out = torch.empty(0, dtype=a.dtype, device=a.device)
        return torch.histc(a, 5, -1, 1, out=out)
    compiled_only(lambda: check(out_form, x))
