"""Compiled cummax, cummin and logcumsumexp (row kernels walking each row in
order), differentially against the CPU, with their backward."""
import pytest
import torch

from differential import ALL, FLOATING, check, compiled_only, make, variants


def with_specials(x):
    """Ties, NaNs and infinities for floats (the rules for each differ)."""
    x = x.clone()
    if x.dtype.is_floating_point and x.numel() > 4 and x.is_contiguous():
        flat = x.view(-1)
        flat[1::5] = flat[0]
        flat[3::7] = float("nan")
        flat[2::11] = float("inf")
        flat[4::13] = -float("inf")
    return x


@pytest.mark.parametrize("dtype", ALL + [torch.uint8])
@pytest.mark.parametrize("op", [torch.cummax, torch.cummin], ids=["cummax", "cummin"])
def test_cummax_cummin(op, dtype):
    for name, x in variants((5, 13, 6), dtype, low=-2, high=2):
        for special in (False, True):
            source = with_specials(x) if special else x
            for dim in ([0, 1, -1] if x.dim() else [0, -1]):
                compiled_only(lambda: check(op, source, dim, message=f"{name} {dim} {special}"))


@pytest.mark.parametrize("dtype", FLOATING)
def test_logcumsumexp(dtype):
    for name, x in variants((5, 13, 6), dtype):
        for special in (False, True):
            source = with_specials(x) if special else x
            for dim in ([0, 1, -1] if x.dim() else [0, -1]):
                compiled_only(lambda: check(torch.logcumsumexp, source, dim, message=f"{name} {dim} {special}"))


def test_out_and_errors():
    def logcumsumexp_out(a):
        out = torch.empty(0, dtype=a.dtype, device=a.device)
        return torch.logcumsumexp(a, 1, out=out)

    def cummax_out(a):
        values = torch.empty(0, dtype=a.dtype, device=a.device)
        indices = torch.empty(0, dtype=torch.long, device=a.device)
        return torch.cummax(a, 0, out=(values, indices))
    compiled_only(lambda: check(logcumsumexp_out, make((4, 9), torch.float32)))
    compiled_only(lambda: check(cummax_out, make((4, 9), torch.float32)))
    check(torch.logcumsumexp, make((4, 9), torch.int64), 1)
    check(torch.cummax, make((4, 9), torch.float32), 2)


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin, torch.logcumsumexp],
                         ids=["cummax", "cummin", "logcumsumexp"])
def test_backward(op):
    x = make((4, 7), torch.float64).requires_grad_()
    kiln = x.detach().to("kiln").requires_grad_()

    def run(a):
        result = op(a, 1)
        return result[0] if isinstance(result, tuple) else result
    expected = run(x)
    actual = run(kiln)
    weights = torch.linspace(-1, 2, expected.numel(), dtype=torch.float64).view(expected.shape)
    expected.backward(weights)
    actual.backward(weights.to("kiln"))
    torch.testing.assert_close(kiln.grad.cpu(), x.grad)
