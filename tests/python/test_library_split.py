"""Large library calls on the stream's worker are cut into blocks over Kiln's
pool (library_threads.h: products by batch, rows or columns; convolutions by
batch or channels), as many threads as torch.get_num_threads() says. Each
block is the CPU kernel's own computation of its elements: results match the
CPU's, in every layout, with a bias, in place, and with one thread."""
import pytest
import torch
import torch.nn.functional as functional

# Sizes past the small-call limit (2 MFLOP and 256 KiB), so the work is queued
# on the worker and split.
PRODUCTS = [(300, 200, 500), (700, 96, 64), (48, 160, 900), (1, 1024, 4096)]
TOLERANCE = {torch.float32: dict(atol=2e-4, rtol=2e-4), torch.float64: {},
             torch.bfloat16: dict(atol=0.5, rtol=2e-2), torch.complex64: dict(atol=2e-4, rtol=2e-4)}


def random(*sizes, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*sizes, generator=generator, dtype=torch.float64).to(dtype)


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request):
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


def check(kiln_result, cpu_result, dtype):
    torch.kiln.synchronize()
    torch.testing.assert_close(kiln_result.cpu(), cpu_result, **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", list(TOLERANCE), ids=str)
@pytest.mark.parametrize("m,k,n", PRODUCTS)
def test_products_match_the_cpu(threads, dtype, m, k, n):
    a, b, bias = random(m, k, dtype=dtype), random(k, n, dtype=dtype, seed=1), random(n, dtype=dtype, seed=2)
    device = [x.to("kiln") for x in (a, b, bias)]
    check(torch.mm(device[0], device[1]), torch.mm(a, b), dtype)
    check(torch.addmm(device[2], device[0], device[1], beta=0.5, alpha=2),
          torch.addmm(bias, a, b, beta=0.5, alpha=2), dtype)
    # Transposed operands (a linear layer's weight) and a strided output.
    check(functional.linear(device[0], device[1].t(), device[2]), functional.linear(a, b.t(), bias), dtype)
    check(torch.mm(device[0].t().contiguous().t(), device[1].t().contiguous().t()), torch.mm(a, b), dtype)
    out = torch.empty(n, m, dtype=dtype, device="kiln").t()
    torch.mm(device[0], device[1], out=out)
    check(out, torch.mm(a, b), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_in_place_addmm_matches_the_cpu(threads, dtype):
    a, b, c = random(256, 300, dtype=dtype), random(300, 400, dtype=dtype, seed=1), random(256, 400, dtype=dtype, seed=2)
    device = c.to("kiln")
    device.addmm_(a.to("kiln"), b.to("kiln"), beta=0.25)
    check(device, c.clone().addmm_(a, b, beta=0.25), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("batches,m,k,n", [(1, 400, 64, 300), (3, 128, 256, 200), (24, 64, 64, 96)])
def test_batched_products_match_the_cpu(threads, dtype, batches, m, k, n):
    a, b = random(batches, m, k, dtype=dtype), random(batches, k, n, dtype=dtype, seed=1)
    bias = random(m, 1, dtype=dtype, seed=2)
    check(torch.bmm(a.to("kiln"), b.to("kiln")), torch.bmm(a, b), dtype)
    check(torch.baddbmm(bias.to("kiln"), a.to("kiln"), b.to("kiln"), alpha=0.5),
          torch.baddbmm(bias, a, b, alpha=0.5), dtype)


def check_forward_and_backward(function, *inputs):
    """function(*inputs) and the gradients of its inputs for a random output
    gradient, on kiln against the CPU; returns kiln's result."""
    leaves = [x.clone().requires_grad_() for x in inputs]
    device = [x.to("kiln").detach().requires_grad_() for x in inputs]
    expected, result = function(*leaves), function(*device)
    grad = random(*expected.shape, seed=3)
    expected.backward(grad)
    result.backward(grad.to("kiln"))
    check(result.detach(), expected.detach(), torch.float32)
    for device_leaf, leaf in zip(device, leaves):
        check(device_leaf.grad, leaf.grad, torch.float32)
    return result


CONVOLUTIONS = {
    # name: (input sizes, weight sizes, keyword arguments)
    "3x3": ((4, 16, 20, 20), (32, 16, 3, 3), dict(padding=1)),
    "3x3-batch-1": ((1, 32, 24, 24), (48, 32, 3, 3), dict(padding=1)),
    "1x1-stride-2": ((3, 64, 24, 24), (96, 64, 1, 1), dict(stride=2)),
    # Uneven strides over odd sizes: the positions read, and the zeros between them in the gradient.
    "1x1-strides-2-3-odd": ((2, 48, 15, 17), (64, 48, 1, 1), dict(stride=(2, 3))),
    "7x7-first-layer": ((2, 3, 64, 64), (16, 3, 7, 7), dict(stride=2, padding=3)),
    "grouped": ((4, 32, 16, 16), (32, 8, 3, 3), dict(padding=1, groups=4)),
    "dilated-1d": ((5, 24, 300), (40, 24, 5), dict(dilation=2)),
    # More weight than input: cut by channels (forward, input gradient).
    "weight-heavy": ((4, 256, 4, 4), (256, 256, 3, 3), dict(padding=1)),
    # Less output gradient than input: the weight gradient cut by input channels.
    "weight-heavy-stride-2": ((4, 128, 8, 8), (256, 128, 3, 3), dict(stride=2, padding=1)),
    # A 1x1 convolution at few positions (oneDNN's, not the per-sample product).
    "1x1-few-positions": ((8, 512, 2, 2), (1024, 512, 1, 1), {}),
    # A 1x1 convolution with many positions (the per-sample product in NCHW).
    "1x1-many-positions": ((2, 64, 16, 16), (96, 64, 1, 1), {}),
}


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels-last"])
@pytest.mark.parametrize("name", sorted(CONVOLUTIONS))
def test_convolutions_forward_and_backward_match_the_cpu(threads, name, channels_last):
    input_sizes, weight_sizes, arguments = CONVOLUTIONS[name]
    if channels_last and len(input_sizes) != 4:
        pytest.skip("channels last is 2-D")
    convolve = functional.conv2d if len(input_sizes) == 4 else functional.conv1d
    images, weight = random(*input_sizes), random(*weight_sizes, seed=1)
    bias = random(weight_sizes[0], seed=2)
    if channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    check_forward_and_backward(lambda *tensors: convolve(*tensors, **arguments), images, weight, bias)


def test_transposed_convolution_matches_the_cpu(threads):
    images, weight = random(4, 32, 12, 12), random(32, 16, 4, 4, seed=1)
    check_forward_and_backward(lambda *tensors: functional.conv_transpose2d(*tensors, stride=2, padding=1),
                               images, weight)


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels-last"])
@pytest.mark.parametrize("positions", [2, 16])
def test_1x1_convolution_without_bias_matches_the_cpu(threads, positions, channels_last):
    """A 1x1 convolution is products on the device (pointwise_convolution.h)."""
    images, weight = random(4, 96, positions, positions), random(160, 96, 1, 1, seed=1)
    if channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    result = check_forward_and_backward(functional.conv2d, images, weight)
    assert result.is_contiguous(memory_format=torch.channels_last) == channels_last


# FFT and batched linear algebra (batch_split.h): past 256 KiB a queued call is
# cut along a batch dimension, one CPU call per block of matrices or signals.
FFTS = {
    "rfft-rows": (lambda x: torch.fft.rfft(x), (96, 1024)),
    "rfft-first-dim": (lambda x: torch.fft.rfft(x, dim=0), (1024, 96)),
    "fft2-batch": (lambda x: torch.fft.fft2(x.to(torch.complex64)), (12, 64, 64)),
    "irfft-middle-batch": (lambda x: torch.fft.irfft(x.to(torch.complex64), dim=-1), (4, 40, 513)),
    "fftn-strided": (lambda x: torch.fft.fftn(x.transpose(0, 1), dim=(1, 2)), (64, 24, 48)),
}


@pytest.mark.parametrize("name", sorted(FFTS))
def test_batched_ffts_match_the_cpu(threads, name):
    transform, sizes = FFTS[name]
    x = random(*sizes)
    check(transform(x.to("kiln")), transform(x), torch.complex64 if transform(x).is_complex() else torch.float32)


def test_fft_out_form_writes_every_block():
    x = random(64, 2048)
    out = torch.empty(64, 1025, dtype=torch.complex64, device="kiln")
    torch.fft.rfft(x.to("kiln"), out=out)
    check(out, torch.fft.rfft(x), torch.complex64)


def spd(*batch, n=64, seed=0):
    a = random(*batch, n, n, seed=seed)
    return a @ a.transpose(-1, -2) + n * torch.eye(n)


LINALG = {
    "inv": (lambda a, b: torch.linalg.inv_ex(a).inverse, 1e-3),
    "cholesky": (lambda a, b: torch.linalg.cholesky_ex(a).L, 1e-3),
    "qr": (lambda a, b: torch.linalg.qr(a).R.abs(), 1e-3),
    "det": (lambda a, b: torch.linalg.det(a / 64).abs().log(), 1e-3),
    "slogdet": (lambda a, b: torch.linalg.slogdet(a).logabsdet, 1e-3),
    "lu_factor": (lambda a, b: torch.linalg.lu_factor_ex(a).LU, 1e-3),
    "solve": (lambda a, b: torch.linalg.solve_ex(a, b).result, 1e-3),
    "solve_triangular": (lambda a, b: torch.linalg.solve_triangular(torch.linalg.cholesky(a), b, upper=False), 1e-3),
    "matrix_exp": (lambda a, b: torch.linalg.matrix_exp(a / a.norm(dim=(-2, -1), keepdim=True)), 1e-4),
}


@pytest.mark.parametrize("batch", [(48,), (3, 20)], ids=["batch-48", "batch-3x20"])
@pytest.mark.parametrize("name", sorted(LINALG))
def test_batched_linear_algebra_matches_the_cpu(threads, name, batch):
    function, tolerance = LINALG[name]
    a, b = spd(*batch), random(*batch, 64, 8, seed=1)
    result = function(a.to("kiln"), b.to("kiln"))
    torch.kiln.synchronize()
    torch.testing.assert_close(result.cpu(), function(a, b), atol=tolerance, rtol=tolerance)


def test_a_broadcast_operand_is_not_cut_as_a_batch():
    # b has the batch's size in its first dimension by coincidence: it is one
    # matrix broadcast over the batch of a, not a batch of its own.
    a, b = spd(64), random(64, 64, seed=1)
    expected = torch.linalg.solve_triangular(torch.linalg.cholesky(a), b, upper=False)
    result = torch.linalg.solve_triangular(torch.linalg.cholesky(a.to("kiln")), b.to("kiln"), upper=False)
    check(result, expected, torch.float32)
