"""Compiled channel_shuffle, forward and backward, differentially against the
CPU: every dtype, ranks 3-5, channels_last and strided inputs, zero-size
batches and the CPU's errors."""
import pytest
import torch
import torch.nn.functional as F

from differential import ALL, assert_same, compiled_only, make


@pytest.mark.parametrize("dtype", ALL + [torch.uint8])
@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 3), ((2, 6, 3, 4), 2), ((1, 8, 2, 3, 2), 4), ((2, 4, 3), 1)])
def test_channel_shuffle(dtype, shape, groups):
    base = make(shape, dtype)
    expected = F.channel_shuffle(base, groups)
    actual = compiled_only(lambda: F.channel_shuffle(base.to("kiln"), groups))
    assert_same(expected, actual)


def test_layouts_and_backward():
    base = make((2, 6, 4, 5), torch.float32)
    for view in [base.contiguous(memory_format=torch.channels_last), base[..., ::2], base.transpose(2, 3), base[:0]]:
        cpu = view.clone().requires_grad_()
        kiln = view.to("kiln").requires_grad_()
        expected = F.channel_shuffle(cpu, 3)
        incoming = make(expected.shape, torch.float32)

        def run():
            actual = F.channel_shuffle(kiln, 3)
            actual.backward(incoming.to("kiln"))
            return actual

        actual = compiled_only(run)
        expected.backward(incoming)
        assert_same(expected, actual)
        assert expected.stride() == actual.stride()
        assert_same(cpu.grad, kiln.grad)


def test_errors_match_the_cpu():
    for shape, groups in [((2, 6), 3), ((2, 6, 2), 0), ((2, 6, 2), 4)]:
        with pytest.raises(RuntimeError) as cpu_error:
            F.channel_shuffle(torch.ones(shape), groups)
        with pytest.raises(RuntimeError) as kiln_error:
            F.channel_shuffle(torch.ones(shape, device="kiln"), groups)
        assert str(cpu_error.value) == str(kiln_error.value)
