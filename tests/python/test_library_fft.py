"""The library path for FFT (library/library_call.h): PyTorch's CPU FFT kernels
(_fft_r2c, _fft_c2r, _fft_c2c) on aliases of kiln memory, queued on the
stream. Differential against the CPU over real, integer and complex inputs,
sizes, dims and norms, non-contiguous, zero-size and 0-dim inputs, dtypes the
CPU refuses, out= forms and backward."""
import pytest
import torch

import torch_kiln
from differential import check, compiled_only, to_kiln

TOLERANCE = (1e-5, 1e-5)  # the same FFT on differently aligned memory


def signal(*shape, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(shape, generator=generator, dtype=dtype)
    values = torch.randn(shape, generator=generator, dtype=torch.float64) * 3
    return (values if dtype.is_floating_point else values.round()).to(dtype)


ONE_DIMENSIONAL = {
    "fft": torch.fft.fft, "ifft": torch.fft.ifft, "rfft": torch.fft.rfft,
    "irfft": torch.fft.irfft, "hfft": torch.fft.hfft, "ihfft": torch.fft.ihfft,
}
MULTI_DIMENSIONAL = {
    "fft2": torch.fft.fft2, "ifft2": torch.fft.ifft2, "fftn": torch.fft.fftn,
    "ifftn": torch.fft.ifftn, "rfft2": torch.fft.rfft2, "irfft2": torch.fft.irfft2,
    "rfftn": torch.fft.rfftn, "irfftn": torch.fft.irfftn, "hfft2": torch.fft.hfft2,
    "hfftn": torch.fft.hfftn,
}
TAKES_REAL_ONLY = {"rfft", "ihfft", "rfft2", "rfftn"}


def inputs_for(name, dtype):
    """The CPU inputs of a test: contiguous, transposed, sliced, batched."""
    if name not in TAKES_REAL_ONLY and dtype == torch.float32:
        yield "complex", signal(4, 6, dtype=torch.complex64)
        yield "complex transposed", signal(6, 4, dtype=torch.complex64).mT
    yield "contiguous", signal(4, 6, dtype=dtype)
    yield "transposed", signal(6, 4, dtype=dtype).mT
    yield "sliced", signal(4, 12, dtype=dtype)[:, ::2]
    yield "batched", signal(2, 3, 8, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
@pytest.mark.parametrize("name", sorted(ONE_DIMENSIONAL))
def test_one_dimensional(name, dtype):
    fn = ONE_DIMENSIONAL[name]
    for layout, x in inputs_for(name, dtype):
        check(fn, x, message=f"{name} {layout}", tolerance=TOLERANCE)
        check(lambda t: fn(t, n=5, dim=0, norm="ortho"), x, message=f"{name} {layout} n=5",
              tolerance=TOLERANCE)
        check(lambda t: fn(t, n=9, norm="forward"), x, message=f"{name} {layout} n=9",
              tolerance=TOLERANCE)
    x = signal(3, 8, dtype=dtype)
    compiled_only(lambda: fn(to_kiln(x)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(MULTI_DIMENSIONAL))
def test_multi_dimensional(name, dtype):
    fn = MULTI_DIMENSIONAL[name]
    for layout, x in inputs_for(name, dtype):
        check(fn, x, message=f"{name} {layout}", tolerance=TOLERANCE)
        check(lambda t: fn(t, s=(3, 5), norm="ortho"), x, message=f"{name} {layout} s",
              tolerance=TOLERANCE)
    x = signal(2, 3, 8, dtype=dtype)
    check(lambda t: fn(t, dim=(0, 2)), x, message=f"{name} dims (0, 2)", tolerance=TOLERANCE)
    compiled_only(lambda: fn(to_kiln(x)))


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "rfftn"])
def test_zero_size_zero_dim_and_refused_dtypes_raise_as_on_the_cpu(name):
    fn = ONE_DIMENSIONAL.get(name) or MULTI_DIMENSIONAL[name]
    check(fn, signal(0, 4), message=f"{name} zero-size batch", tolerance=TOLERANCE)
    check(fn, signal(4, 0), message=f"{name} zero-size signal")
    check(fn, torch.tensor(1.5), message=f"{name} 0-dim")
    for dtype in (torch.float16, torch.bfloat16):
        check(fn, signal(4, 8, dtype=dtype), message=f"{name} {dtype}", tolerance=(1e-2, 1e-2))


def test_out_forms():
    x = signal(3, 8)
    out = torch.empty(0, dtype=torch.complex64, device="kiln")
    torch.fft.rfft(x.to("kiln"), out=out)
    torch.testing.assert_close(out.cpu(), torch.fft.rfft(x), rtol=1e-5, atol=1e-5)
    out = torch.empty(3, 8, device="kiln")
    torch.fft.irfft(torch.fft.rfft(x).to("kiln"), n=8, out=out)
    torch.testing.assert_close(out.cpu(), x, rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError):
        torch.fft.rfft(x.to("kiln"), out=torch.empty(0, dtype=torch.int64, device="kiln"))


def test_paths_are_library_and_queued_work_is_ordered():
    x = signal(64, 256)
    device_x = x.to("kiln")
    torch_kiln.clear_op_tracking()
    spectrum = torch.fft.rfft(device_x)        # queued on the stream
    device_x.zero_()                           # ordered after the transform
    torch.testing.assert_close(spectrum.cpu(), torch.fft.rfft(x), rtol=1e-5, atol=1e-4)
    assert torch_kiln.get_executed_ops()["aten::_fft_r2c"] == {"library": 1}


def test_result_transposed_in_place_before_the_work_runs():
    x = signal(8, 200)
    expected = torch.stft(x, n_fft=16, hop_length=4, center=False, return_complex=True)
    result = compiled_only(lambda: torch.stft(x.to("kiln"), n_fft=16, hop_length=4,
                                              center=False, return_complex=True))
    torch.testing.assert_close(result.cpu(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["rfft", "fft2", "rfftn", "fftn", "rfft2"])
def test_backward(name):
    fn = ONE_DIMENSIONAL.get(name) or MULTI_DIMENSIONAL[name]
    x = signal(3, 8)
    cpu = x.clone().requires_grad_()
    device = x.to("kiln").requires_grad_()
    weights = torch.randn(torch.view_as_real(fn(x)).shape)
    (torch.view_as_real(fn(cpu)) * weights).sum().backward()
    compiled_only(lambda: (torch.view_as_real(fn(device)) * weights.to("kiln")).sum().backward())
    torch.testing.assert_close(device.grad.cpu(), cpu.grad, rtol=1e-4, atol=1e-4)


def test_lazily_conjugated_input():
    x = signal(3, 8, dtype=torch.complex64)
    for fn in (torch.fft.fft, torch.fft.irfft, torch.fft.fftn):
        check(lambda t: fn(t.conj()), x, tolerance=TOLERANCE)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128, torch.float32,
                                   torch.int64])
def test_conj_physical_that_ihfft2_ends_with(dtype):
    x = signal(4, 6, dtype=dtype)
    inputs = [x, x.mT, x[:, ::2], x[:0], x[0, 0]]
    if dtype.is_complex:
        inputs.append(x.conj())
    for t in inputs:
        check(torch.conj_physical, t, message=f"{tuple(t.shape)} {t.stride()}")
        check(lambda a: a.clone().conj_physical_(), t, message="in place")
        check(lambda a: torch.conj_physical(a, out=torch.empty(0, dtype=a.dtype,
                                                                device=a.device)), t)
    compiled_only(lambda: torch.fft.ihfft2(to_kiln(signal(4, 6))))
    if dtype.is_complex:
        check(lambda a: torch.conj_physical(a, out=torch.empty(0, device=a.device)), x,
              message="complex into a real out")
