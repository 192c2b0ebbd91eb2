"""Compiled grid_sampler_2d (F.grid_sample on 4-D input), forward,
differentially against the CPU: bilinear/nearest/bicubic, zeros/border/
reflection padding, align_corners, grids reaching outside the image,
channels_last and transposed inputs, zero-size batches, floating dtypes and
the CPU's errors; and its backward (grad_input and grad_grid)."""
import pytest
import torch
import torch.nn.functional as F

from differential import FLOATING, assert_same, check, compiled_only, make

A = torch.ops.aten
MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]


def run(image, grid, **options):
    expected = F.grid_sample(image, grid, **options)
    actual = compiled_only(lambda: F.grid_sample(image.to("kiln"), grid.to("kiln"), **options))
    assert_same(expected, actual, str(options))


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("mode", MODES)
def test_modes_and_paddings(dtype, mode):
    image = make((2, 3, 5, 6), dtype)
    # Reaches past the edges (padding matters) and hits pixel centres and
    # half-way points exactly (rounding ties, integer floors).
    grid = make((2, 4, 7, 2), dtype, low=-1.6, high=1.6)
    grid[0, 0, :, 0] = torch.linspace(-1, 1, 7).to(dtype)
    grid[0, 0, :, 1] = 0.5
    for padding in PADDINGS:
        for align_corners in (False, True):
            run(image, grid, mode=mode, padding_mode=padding, align_corners=align_corners)


def test_layouts_and_sizes():
    image = make((2, 3, 4, 5), torch.float32)
    grid = make((2, 3, 3, 2), torch.float32, low=-1.2, high=1.2)
    run(image.contiguous(memory_format=torch.channels_last), grid, align_corners=False)
    run(make((2, 5, 4, 3), torch.float32).transpose(1, 3), grid, mode="bicubic", align_corners=True)
    run(image, make((2, 3, 6, 2), torch.float32).transpose(1, 2)[:, ::2], padding_mode="reflection",
        align_corners=False)
    run(image[:0], grid[:0], align_corners=False)
    run(image, grid[:, :0], align_corners=False)
    run(make((1, 1, 1, 1), torch.float32), grid[:1], mode="bicubic", padding_mode="reflection",
        align_corners=True)


def test_errors_match_the_cpu():
    image = make((1, 2, 3, 3), torch.float32)
    grid = make((1, 2, 2, 2), torch.float32)
    cases = [
        (image, grid.double()),
        (image[0], grid),
        (image, make((1, 2, 2, 3), torch.float32)),
        (make((2, 2, 3, 3), torch.float32), grid),
        (make((1, 2, 0, 3), torch.float32), grid),
        (image.long(), grid.long()),
    ]
    for arguments in cases:
        check(lambda i, g: A.grid_sampler_2d(i, g, 0, 0, False), *arguments)


def run_backward(image, grid, **options):
    cpu_image, cpu_grid = image.clone().requires_grad_(), grid.clone().requires_grad_()
    expected = F.grid_sample(cpu_image, cpu_grid, **options)
    incoming = make(tuple(expected.shape), image.dtype)
    expected.backward(incoming)
    kiln_image = image.to("kiln").requires_grad_()
    kiln_grid = grid.to("kiln").requires_grad_()
    compiled_only(lambda: F.grid_sample(kiln_image, kiln_grid, **options).backward(incoming.to("kiln")))
    assert_same(cpu_image.grad, kiln_image.grad, f"{options} grad_input")
    # grad_grid sums up to 16 taps times every channel: kiln adds in another
    # order than the CPU's loop, so float32 gets a summation-order tolerance.
    tolerance = (1e-5, 1e-4) if image.dtype == torch.float32 else None
    assert_same(cpu_grid.grad, kiln_grid.grad, f"{options} grad_grid", tolerance)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", MODES)
def test_backward(dtype, mode):
    image = make((2, 3, 5, 6), dtype)
    grid = make((2, 4, 7, 2), dtype, low=-1.6, high=1.6)
    for padding in PADDINGS:
        for align_corners in (False, True):
            run_backward(image, grid, mode=mode, padding_mode=padding, align_corners=align_corners)
    run_backward(image[:0], grid[:0], mode=mode, align_corners=False)


def test_backward_output_mask():
    image, grid = make((1, 2, 3, 4), torch.float64), make((1, 2, 2, 2), torch.float64)
    incoming = make((1, 2, 2, 2), torch.float64)
    for mask in ([False, True], [True, True]):
        check(lambda g, i, r: A.grid_sampler_2d_backward(g, i, r, 0, 1, False, mask), incoming, image, grid)
