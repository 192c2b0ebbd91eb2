"""Compiled im2col (F.unfold) and col2im (F.fold), each the other's backward,
differentially against the CPU: kernel, dilation, padding and stride, batched
and unbatched, channels_last and strided inputs, zero-size batches, dtypes
(floating and bool) and the CPU's errors."""
import itertools

import pytest
import torch
import torch.nn.functional as F

from differential import FLOATING, check_with_gradient, make

PARAMETERS = list(itertools.product([(2, 2), (3, 2)], [1, (2, 1)], [0, (1, 2)], [1, (2, 3)]))


run_both = check_with_gradient


@pytest.mark.parametrize("kernel,dilation,padding,stride", PARAMETERS)
def test_unfold_fold_parameters(kernel, dilation, padding, stride):
    arguments = dict(kernel_size=kernel, dilation=dilation, padding=padding, stride=stride)
    image = make((2, 3, 7, 8), torch.float32)
    run_both(lambda t: F.unfold(t, **arguments), image)
    columns = F.unfold(image, **arguments)
    run_both(lambda t: F.fold(t, (7, 8), **arguments), columns)


@pytest.mark.parametrize("dtype", FLOATING + [torch.bool])
def test_unfold_fold_dtypes(dtype):
    image = make((2, 3, 6, 5), dtype)
    run_both(lambda t: F.unfold(t, (2, 3), padding=1), image)
    columns = make((2, 3 * 6, 16), dtype)
    run_both(lambda t: F.fold(t, (5, 6), (2, 3), stride=1), columns)


def test_layouts_and_unbatched():
    image = make((2, 3, 6, 8), torch.float32)
    for view in [image.contiguous(memory_format=torch.channels_last), image[..., ::2], image.transpose(2, 3),
                 image[0], image[:0]]:
        run_both(lambda t: F.unfold(t, 2, padding=1, stride=2), view)
    columns = make((2, 12, 12), torch.float32)
    for view in [columns.transpose(1, 2).contiguous().transpose(1, 2), columns[0], columns[:0]]:
        run_both(lambda t: F.fold(t, (4, 5), 2), view)


def test_errors_match_the_cpu():
    A = torch.ops.aten
    image = make((1, 2, 4, 4), torch.float32)
    columns = make((1, 8, 9), torch.float32)
    cases = [
        lambda i, c: A.im2col(i, [2], [1, 1], [0, 0], [1, 1]),
        lambda i, c: A.im2col(i, [5, 5], [1, 1], [0, 0], [1, 1]),
        lambda i, c: A.im2col(i, [2, 2], [0, 1], [0, 0], [1, 1]),
        lambda i, c: A.im2col(i.long(), [2, 2], [1, 1], [0, 0], [1, 1]),
        lambda i, c: A.col2im(c, [4, 4], [3, 3], [1, 1], [0, 0], [1, 1]),
        lambda i, c: A.col2im(c, [5, 5], [2, 2], [1, 1], [0, 0], [1, 1]),
        lambda i, c: A.col2im(c.long(), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1]),
    ]
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu_error:
            case(image, columns)
        with pytest.raises(type(cpu_error.value)) as kiln_error:
            case(image.to("kiln"), columns.to("kiln"))
        assert str(cpu_error.value).split("\n")[0] == str(kiln_error.value).split("\n")[0]
