"""Compiled adaptive max pooling (1-D through 2-D), values and indices,
forward and backward, differentially against the CPU: output sizes that
divide, overlap and exceed the input, windows larger than one launch's taps,
NaN, channels_last and strided inputs, unbatched and zero-size batches,
floating dtypes and the CPU's errors."""
import pytest
import torch
import torch.nn.functional as F

from differential import FLOATING, assert_same, compiled_only, make


def run_both(fn, base, only_compiled=True):
    cpu = base.detach().clone().requires_grad_()
    kiln = base.detach().to("kiln").requires_grad_()
    expected = fn(cpu)
    incoming = make(expected[0].shape, expected[0].dtype)

    def on_kiln():
        actual = fn(kiln)
        actual[0].backward(incoming.to("kiln"))
        return actual

    actual = compiled_only(on_kiln) if only_compiled else on_kiln()
    assert_same(expected, actual)
    expected[0].backward(incoming)
    assert_same(cpu.grad, kiln.grad, "grad")


@pytest.mark.parametrize("output_size", [(1, 1), (3, 4), (4, 5), (7, 9), (12, 3), (2, 1)])
@pytest.mark.parametrize("dtype", FLOATING)
def test_adaptive_max_pool2d(output_size, dtype):
    run_both(lambda t: F.adaptive_max_pool2d(t, output_size, return_indices=True), make((2, 3, 8, 10), dtype))


def test_large_windows_and_nan():
    base = make((1, 2, 40, 30), torch.float32)
    base[0, 0, 3, 4] = float("nan")
    run_both(lambda t: F.adaptive_max_pool2d(t, (2, 1), return_indices=True), base)
    run_both(lambda t: F.adaptive_max_pool2d(t, (3, 3), return_indices=True), make((2, 2, 25, 25), torch.float32))


def test_adaptive_max_pool1d():
    run_both(lambda t: F.adaptive_max_pool1d(t, 4, return_indices=True), make((2, 3, 9), torch.float32))
    run_both(lambda t: F.adaptive_max_pool1d(t, 5, return_indices=True), make((3, 7), torch.float16))


def test_layouts():
    base = make((2, 3, 8, 10), torch.float32)
    for view in [base.contiguous(memory_format=torch.channels_last), base[..., ::2], base.transpose(2, 3),
                 base[0], base[:0]]:
        run_both(lambda t: F.adaptive_max_pool2d(t, (3, 4), return_indices=True), view)


def test_errors_match_the_cpu():
    A = torch.ops.aten
    cases = [lambda t: A.adaptive_max_pool2d(t, [2]), lambda t: A.adaptive_max_pool2d(t[0, 0, 0], [2, 2]),
             lambda t: A.adaptive_max_pool2d(t.long(), [2, 2]), lambda t: A.adaptive_max_pool2d(t[:, :, :0], [2, 2])]
    base = make((1, 2, 4, 4), torch.float32)
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu_error:
            case(base)
        with pytest.raises(type(cpu_error.value)) as kiln_error:
            case(base.to("kiln"))
        assert str(cpu_error.value).split("\n")[0] == str(kiln_error.value).split("\n")[0]
