"""Compiled 3-D max pooling with indices, adaptive 3-D max and average pooling,
forward and backward, differentially against the CPU: kernel, stride,
padding, dilation and ceil_mode, adaptive sizes, NaN, unbatched,
channels_last_3d and zero-size batches, dtypes and the CPU's errors."""
import itertools

import pytest
import torch
import torch.nn.functional as F

from differential import FLOATING, assert_same, compiled_only, make


def run_both(fn, base, only_compiled=True):
    differentiable = base.dtype.is_floating_point
    cpu = base.detach().clone().requires_grad_(differentiable)
    kiln = base.detach().to("kiln").requires_grad_(differentiable)
    expected = fn(cpu)
    incoming = make(expected[0].shape, expected[0].dtype) if differentiable else None

    def on_kiln():
        actual = fn(kiln)
        if differentiable:
            actual[0].backward(incoming.to("kiln"))
        return actual

    actual = compiled_only(on_kiln) if only_compiled else on_kiln()
    assert_same(expected, actual)
    if differentiable:
        expected[0].backward(incoming)
        assert_same(cpu.grad, kiln.grad, "grad")


PARAMETERS = list(itertools.product([2, (3, 2, 2)], [1, (2, 1, 2)], [0, 1], [1, 2], [False, True]))


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", PARAMETERS)
def test_max_pool3d_parameters(kernel, stride, padding, dilation, ceil_mode):
    base = make((2, 2, 6, 7, 8), torch.float32)
    run_both(lambda t: F.max_pool3d(t, kernel, stride, padding, dilation, ceil_mode, return_indices=True), base)


@pytest.mark.parametrize("dtype", FLOATING + [torch.int64, torch.int32, torch.uint8])
def test_max_pool3d_dtypes(dtype):
    run_both(lambda t: F.max_pool3d(t, 2, 1, 1, return_indices=True), make((2, 2, 4, 5, 4), dtype))


@pytest.mark.parametrize("output_size", [(1, 1, 1), (2, 3, 4), (5, 7, 3), (3, 1, 2)])
@pytest.mark.parametrize("dtype", FLOATING)
def test_adaptive_max_pool3d(output_size, dtype):
    run_both(lambda t: F.adaptive_max_pool3d(t, output_size, return_indices=True), make((2, 2, 5, 6, 7), dtype))


def test_nan_layouts_and_large_windows():
    base = make((2, 3, 5, 6, 7), torch.float32)
    base[0, 1, 2, 3, 4] = float("nan")
    for view in [base, base.contiguous(memory_format=torch.channels_last_3d), base[..., ::2], base[0], base[:0]]:
        run_both(lambda t: F.max_pool3d(t, 2, return_indices=True), view)
        run_both(lambda t: F.adaptive_max_pool3d(t, (2, 3, 2), return_indices=True), view)
    # Windows over kMaxTaps take the CPU's kernel.
    run_both(lambda t: F.adaptive_max_pool3d(t, (1, 1, 1), return_indices=True), make((1, 2, 7, 7, 7), torch.float32),
             only_compiled=False)


def test_errors_match_the_cpu():
    A = torch.ops.aten
    base = make((1, 2, 4, 4, 4), torch.float32)
    cases = [lambda t: A.max_pool3d_with_indices(t, [2, 2]), lambda t: A.max_pool3d_with_indices(t, [2], [0]),
             lambda t: A.max_pool3d_with_indices(t, [2], [], [2]), lambda t: A.max_pool3d_with_indices(t[0, 0], [2]),
             lambda t: A.max_pool3d_with_indices(t, [5]), lambda t: A.max_pool3d_with_indices(t.bool(), [2]),
             lambda t: A.adaptive_max_pool3d(t.long(), [2, 2, 2]), lambda t: A.adaptive_max_pool3d(t, [2, 2])]
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu_error:
            case(base)
        with pytest.raises(type(cpu_error.value)) as kiln_error:
            case(base.to("kiln"))
        assert str(cpu_error.value).split("\n")[0] == str(kiln_error.value).split("\n")[0]


@pytest.mark.parametrize("output_size", [(2, 3, 4), (5, 7, 3), (3, 1, 2), (4, 4, 4)])
@pytest.mark.parametrize("dtype", FLOATING)
def test_adaptive_avg_pool3d(output_size, dtype):
    base = make((2, 2, 5, 6, 7), dtype)
    run_both(lambda t: (F.adaptive_avg_pool3d(t, output_size),), base)


def test_adaptive_avg_pool3d_layouts_and_errors():
    base = make((2, 3, 5, 6, 7), torch.float32)
    for view in [base.contiguous(memory_format=torch.channels_last_3d), base[..., ::2], base[0], base[:0]]:
        run_both(lambda t: (F.adaptive_avg_pool3d(t, (2, 3, 2)),), view)
    run_both(lambda t: (F.adaptive_avg_pool3d(t, (1, 2, 1)),), make((1, 2, 14, 9, 12), torch.float32),
             only_compiled=False)
    A = torch.ops.aten
    cases = [lambda t: A._adaptive_avg_pool3d(t.long(), [2, 2, 2]), lambda t: A._adaptive_avg_pool3d(t, [2, 2]),
             lambda t: A._adaptive_avg_pool3d(t[:, :0], [2, 2, 2]), lambda t: A._adaptive_avg_pool3d(t[0, 0], [2, 2, 2])]
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu_error:
            case(base)
        with pytest.raises(type(cpu_error.value)) as kiln_error:
            case(base.to("kiln"))
        assert str(cpu_error.value).split("\n")[0] == str(kiln_error.value).split("\n")[0]


AVG_PARAMETERS = list(itertools.product([2, (3, 2, 2)], [1, (2, 1, 2)], [0, 1], [False, True], [False, True],
                                        [None, 3]))


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,count_include_pad,divisor", AVG_PARAMETERS)
def test_avg_pool3d_parameters(kernel, stride, padding, ceil_mode, count_include_pad, divisor):
    base = make((2, 2, 5, 6, 7), torch.float32)
    run_both(lambda t: (F.avg_pool3d(t, kernel, stride, padding, ceil_mode, count_include_pad, divisor),), base)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_avg_pool3d_dtypes_and_layouts(dtype):
    base = make((2, 3, 5, 6, 7), dtype, low=-50, high=50)
    for view in [base, base.contiguous(memory_format=torch.channels_last_3d), base[..., ::2], base[0], base[:0]]:
        run_both(lambda t: (F.avg_pool3d(t, 2, 2, 1, True, False),), view)
        run_both(lambda t: (F.avg_pool3d(t, 3, 1, 1, False, True, 4),), view)
    A = torch.ops.aten
    for case in [lambda t: A.avg_pool3d(t.half(), [2]), lambda t: A.avg_pool3d(t, [2, 2]),
                 lambda t: A.avg_pool3d(t, [2], [], [2])]:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu_error:
            case(base)
        with pytest.raises(type(cpu_error.value)) as kiln_error:
            case(base.to("kiln"))
        assert str(cpu_error.value).split("\n")[0] == str(kiln_error.value).split("\n")[0]
