"""Compiled histc (one sequential row kernel), differentially against the
CPU: bin edges, out-of-range and NaN values, the data-chosen range; histc on
integer inputs, which CUDA accepts and the CPU refuses, against the CPU's
result on the same values as float32; and bincount."""
import pytest
import torch

import torch_kiln
from differential import FLOATING, check, compiled_only, make

INTEGER_TYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


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
    check(torch.histc, make((20,), torch.float32) > 0)  # bool: refused on every device

    def out_form(a):
        out = torch.empty(0, dtype=a.dtype, device=a.device)
        return torch.histc(a, 5, -1, 1, out=out)
    compiled_only(lambda: check(out_form, x))


@pytest.mark.parametrize("dtype", INTEGER_TYPES)
def test_histc_of_integers_counts_as_cuda_does(dtype):
    # What mixture-of-experts routing does: tokens per expert, histc of int32 indices.
    generator = torch.Generator().manual_seed(0)
    values = torch.randint(0, 12, (500,), generator=generator).to(dtype)
    strided = torch.randint(0, 100, (30, 20), generator=generator).to(dtype).t()[::2]
    for x in (values, strided, values[:1], values[:0]):
        for bins, low, high in [(12, 0, 11), (12, 0, 12), (5, 2, 9), (7, 0, 0), (1, 0, 0), (300, 0, 100)]:
            result = compiled_only(lambda: torch.histc(x.to("kiln"), bins, low, high))
            # CUDA's range: equal bounds take the data's extremes, equal extremes widen by one.
            first, last = (x.min().item(), x.max().item()) if low == high and x.numel() else (low, high)
            if first == last:
                first, last = first - 1, last + 1
            expected = torch.histc(x.float(), bins, float(first), float(last))
            assert result.dtype == dtype
            assert torch.equal(result.cpu(), expected.to(dtype)), (bins, low, high, x.shape)


def test_histc_of_integers_rejects_an_inverted_range():
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(torch.arange(5, device="kiln"), 4, 3, 1)


@pytest.mark.parametrize("dtype", INTEGER_TYPES)
def test_bincount(dtype):
    generator = torch.Generator().manual_seed(1)
    x = torch.randint(0, 9, (300,), generator=generator).to(dtype)
    for weights in (None, torch.randn(300, generator=generator), torch.randn(300, generator=generator).double(),
                    torch.randint(-5, 5, (300,), generator=generator), torch.rand(300, generator=generator).half()):
        for minlength in (0, 4, 20):
            compiled_only(lambda: check(torch.bincount, x, weights, minlength=minlength))
    compiled_only(lambda: check(torch.bincount, x[::3]))
    compiled_only(lambda: check(torch.bincount, x[:0], minlength=5))
    compiled_only(lambda: check(torch.bincount, x[:0], torch.ones(0), minlength=2))


def test_bincount_errors():
    x = torch.tensor([0, 3, 1])
    check(torch.bincount, x.reshape(3, 1))
    check(torch.bincount, torch.tensor([1, -1]))
    check(torch.bincount, x, torch.ones(2))
    check(torch.bincount, x, minlength=-1)
    check(torch.bincount, x.float())
    check(torch.bincount, x > 0)
    torch_kiln.clear_op_tracking()
    torch.bincount(x.to("kiln"))
    torch.histc(x.to("kiln"), 4)
    torch.sort(x.to("kiln"))
    executed = torch_kiln.get_executed_ops()
    # Row kernels (histc, sort, ...) are counted too, as every kiln kernel is.
    assert executed["aten::bincount"] == executed["aten::histc"] == {"compiled": 1}
    assert executed["aten::sort.stable"] == {"compiled": 1}
