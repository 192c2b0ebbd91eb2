"""Compiled max_unpool2d and max_unpool3d (and max_unpool1d, composite over
2-D), forward and backward, differentially against the CPU: indices from
max pooling, unbatched,
channels_last and zero-size batches, floating dtypes and the CPU's errors."""
import pytest
import torch
import torch.nn.functional as F

from differential import FLOATING, assert_same, compiled_only, make


def run_both(fn, base, indices, backward=True):
    differentiable = backward and base.dtype.is_floating_point
    cpu = base.detach().clone().requires_grad_(differentiable)
    kiln = base.detach().to("kiln").requires_grad_(differentiable)
    kiln_indices = indices.to("kiln")
    expected = fn(cpu, indices)
    incoming = make(expected.shape, expected.dtype)

    def on_kiln():
        actual = fn(kiln, kiln_indices)
        if differentiable:
            actual.backward(incoming.to("kiln"))
        return actual

    actual = compiled_only(on_kiln)
    assert_same(expected, actual)
    if differentiable:
        expected.backward(incoming)
        assert_same(cpu.grad, kiln.grad, "grad")


@pytest.mark.parametrize("dtype", FLOATING)
def test_unpool_after_pool(dtype):
    image = make((2, 3, 8, 9), dtype)
    pooled, indices = F.max_pool2d(image, 2, return_indices=True)
    run_both(lambda t, i: F.max_unpool2d(t, i, 2, output_size=(8, 9)), pooled, indices)
    line = make((2, 3, 9), dtype)
    pooled, indices = F.max_pool1d(line, 3, stride=2, return_indices=True)
    run_both(lambda t, i: F.max_unpool1d(t, i, 3, stride=2, output_size=(9,)), pooled, indices)
    volume = make((2, 2, 4, 6, 5), dtype)
    pooled, indices = F.max_pool3d(volume, 2, return_indices=True)
    run_both(lambda t, i: F.max_unpool3d(t, i, 2, output_size=(4, 6, 5)), pooled, indices)


def test_layouts():
    values = make((2, 3, 4, 4), torch.float32)
    # Distinct indices per plane: with repeats the CPU's parallel kernel keeps
    # whichever write lands last, which is not deterministic.
    indices = torch.stack([torch.randperm(20)[:16] for _ in range(6)]).reshape(2, 3, 4, 4)
    A = torch.ops.aten
    run_both(lambda t, i: A.max_unpool2d(t, i, [5, 4]), values, indices, backward=False)
    run_both(lambda t, i: A.max_unpool2d(t, i, [5, 4]), values.contiguous(memory_format=torch.channels_last),
             indices.contiguous(memory_format=torch.channels_last), backward=False)
    run_both(lambda t, i: A.max_unpool2d(t, i, [5, 4]), values[0], indices[0], backward=False)
    run_both(lambda t, i: A.max_unpool2d(t, i, [5, 4]), values[:0], indices[:0], backward=False)
    run_both(lambda t, i: A.max_unpool3d(t, i, [2, 3, 4], [1, 1, 1], [0, 0, 0]), values, indices[:, :, :, :], backward=False)


def test_errors_match_the_cpu():
    A = torch.ops.aten
    values = make((1, 2, 2, 2), torch.float32)
    indices = torch.randint(0, 16, (1, 2, 2, 2))
    cases = [
        lambda v, i: A.max_unpool2d(v, i * 0 + 100, [4, 4]), lambda v, i: A.max_unpool2d(v, i, [4]),
        lambda v, i: A.max_unpool2d(v.long(), i, [4, 4]), lambda v, i: A.max_unpool2d(v, i.int(), [4, 4]),
        lambda v, i: A.max_unpool2d(v, i[0], [4, 4]), lambda v, i: A.max_unpool2d(v[0, 0, 0], i[0, 0, 0], [4, 4]),
        lambda v, i: A.max_unpool3d(v, i, [2, 4, 4], [1, 1], [0, 0, 0]),
        lambda v, i: A.max_unpool3d(v, i * 0 + 50, [2, 4, 4], [1, 1, 1], [0, 0, 0]),
    ]
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu_error:
            case(values, indices)
        with pytest.raises(type(cpu_error.value)) as kiln_error:
            case(values.to("kiln"), indices.to("kiln"))
            torch.kiln.synchronize()
        assert str(cpu_error.value).split("\n")[0] == str(kiln_error.value).split("\n")[0]
