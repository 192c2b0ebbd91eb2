"""Native kernels, differentially against the CPU: creation, views (which must
alias), resize_/set_, copies in every direction over dtypes, non-contiguous,
broadcast, zero-size and scalar tensors, fill_/zero_ and item()."""
import pytest
import torch

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64]


def sample(shape, dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=generator)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype)
    return torch.randint(-100 if dtype != torch.uint8 else 0, 100, shape, generator=generator).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 0, 3), (4, 3, 2)])
def test_round_trip(dtype, shape):
    cpu = sample(shape, dtype)
    device = cpu.to("kiln")
    assert device.dtype == dtype and device.shape == cpu.shape and device.device.type == "kiln"
    assert torch.equal(device.cpu(), cpu)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16])
def test_non_contiguous_copies(dtype):
    cpu = sample((6, 8), dtype)
    for view in (cpu.t(), cpu[:, ::2], cpu[1:, 2:5], cpu.unsqueeze(0).expand(3, 6, 8)):
        assert torch.equal(view.to("kiln").cpu(), view)
    device = cpu.to("kiln")
    for view_of_device, view_of_cpu in ((device.t(), cpu.t()), (device[:, ::2], cpu[:, ::2])):
        assert torch.equal(view_of_device.cpu(), view_of_cpu)
        assert torch.equal(view_of_device.contiguous().cpu(), view_of_cpu.contiguous())


@pytest.mark.parametrize("source_dtype,target_dtype", [
    (torch.float32, torch.float64), (torch.float64, torch.float16), (torch.int64, torch.float32),
    (torch.float32, torch.int32), (torch.bool, torch.float32), (torch.float32, torch.bfloat16)])
def test_dtype_conversion_in_every_direction(source_dtype, target_dtype):
    cpu = sample((4, 5), source_dtype)
    expected = cpu.to(target_dtype)
    device = cpu.to("kiln")
    assert torch.equal(cpu.to("kiln", target_dtype).cpu(), expected)      # host to device
    assert torch.equal(device.to(target_dtype).cpu(), expected)           # device to device
    assert torch.equal(device.to("cpu", target_dtype), expected)          # device to host


def test_copy_into_strided_destinations_and_broadcast():
    source = sample((4, 1), torch.float32)
    destination = torch.zeros(4, 6, device="kiln")
    destination.copy_(source)                        # host to device, broadcast
    assert torch.equal(destination.cpu(), source.expand(4, 6))
    base = torch.zeros(6, 4, device="kiln")
    base.t().copy_(destination)                      # device to device, strided target
    assert torch.equal(base.cpu(), source.expand(4, 6).t())
    target = torch.zeros(6, 4).t()
    target.copy_(destination)                        # device to host, strided target
    assert torch.equal(target, source.expand(4, 6))


def test_copy_between_devices_keeps_order():
    source = torch.arange(1000.0, device="kiln")
    copied = torch.empty(1000, device="kiln")
    for _ in range(5):
        source.add_(1)
        copied.copy_(source)
    assert torch.equal(copied.cpu(), torch.arange(1000.0) + 5)


def test_views_alias_device_memory():
    device = torch.zeros(4, 6, device="kiln")
    device.view(24)[3] = 7
    device.view(6, 4).t()[0, 1] = 5
    device.as_strided((2,), (6,), 1).fill_(9)
    device.reshape(2, 12)[1].zero_()
    expected = torch.zeros(4, 6)
    expected.view(24)[3] = 7
    expected.view(6, 4).t()[0, 1] = 5
    expected.as_strided((2,), (6,), 1).fill_(9)
    expected.reshape(2, 12)[1].zero_()
    assert torch.equal(device.cpu(), expected)
    assert device.view(24).untyped_storage().data_ptr() == device.untyped_storage().data_ptr()


def test_empty_strided_and_memory_format():
    tensor = torch.empty_strided((3, 4), (1, 3), device="kiln")
    assert tensor.stride() == (1, 3)
    channels_last = torch.empty(2, 3, 4, 5, device="kiln", memory_format=torch.channels_last)
    assert channels_last.is_contiguous(memory_format=torch.channels_last)


def test_resize_keeps_contents_and_grows_storage():
    tensor = torch.arange(6.0, device="kiln")
    tensor.resize_(2, 3)
    assert torch.equal(tensor.cpu(), torch.arange(6.0).view(2, 3))
    tensor.resize_(4, 4)
    assert tensor.shape == (4, 4)
    assert torch.equal(tensor.view(-1)[:6].cpu(), torch.arange(6.0))
    tensor.resize_(0)
    assert tensor.numel() == 0


def test_set_overloads():
    source = torch.arange(12.0, device="kiln")
    target = torch.empty(0, device="kiln")
    target.set_(source)
    assert torch.equal(target.cpu(), torch.arange(12.0))
    target.set_(source.untyped_storage(), 2, (2, 3), (3, 1))
    assert torch.equal(target.cpu(), torch.arange(12.0)[2:8].view(2, 3))
    target.set_(source.untyped_storage())
    assert target.shape == (12,)
    target.set_()
    assert target.numel() == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_zero_and_item(dtype):
    value = True if dtype == torch.bool else (3 if not dtype.is_floating_point and not dtype.is_complex else 2.5)
    device = torch.empty(3, 5, dtype=dtype, device="kiln")
    device.fill_(value)
    assert torch.equal(device.cpu(), torch.full((3, 5), value, dtype=dtype))
    device[:, 1:3].zero_()
    expected = torch.full((3, 5), value, dtype=dtype)
    expected[:, 1:3] = 0
    assert torch.equal(device.cpu(), expected)
    assert device[0, 0].item() == expected[0, 0].item()
    device.fill_(torch.tensor(1, dtype=dtype, device="kiln"))      # fill_.Tensor
    assert torch.equal(device.cpu(), torch.ones(3, 5, dtype=dtype))


FILL_VALUES = [(torch.float32, 1.5), (torch.float32, -0.0), (torch.float32, float("nan")),
               (torch.float64, -2.75), (torch.int64, 2**40 + 3), (torch.int16, -2), (torch.uint8, 7),
               (torch.bool, True), (torch.bfloat16, 0.3), (torch.complex128, 1 - 2j),
               (torch.float32, 0.0), (torch.int32, -1)]


@pytest.mark.parametrize("numel", [1, 3, 4095, 4096, 4097, 100003])
@pytest.mark.parametrize("dtype,value", FILL_VALUES, ids=[f"{d}-{v}" for d, v in FILL_VALUES])
def test_dense_fill_of_every_element(dtype, value, numel):
    # Dense fills are one memset, or the value copied forward in 16 KiB
    # blocks (fill.cc): sizes around and past one block, and values whose
    # bytes differ (-0.0, NaN, 16-byte complex) or repeat (0, -1).
    device = torch.full((numel,), 5, dtype=dtype).to("kiln")
    device.fill_(value)
    expected = torch.full((numel,), value, dtype=dtype)
    assert torch.equal(device.cpu().view(torch.uint8), expected.view(torch.uint8))


def test_item_of_zero_size_fails_clearly():
    with pytest.raises(RuntimeError):
        torch.empty(0, device="kiln").item()


def test_pinned_non_blocking_copies():
    host = torch.randn(1024).pin_memory()
    assert host.is_pinned()
    device = host.to("kiln", non_blocking=True)
    back = torch.empty(1024).pin_memory()
    back.copy_(device, non_blocking=True)
    torch.kiln.synchronize()
    assert torch.equal(back, host)
    assert torch.kiln.current_stream().query()


# Byte copies from 512 KiB (host waiting) or 4 MiB (queued) on are split over
# the host's threads in 64 KiB blocks (native/copy.cc): sizes around those
# lines, and ones that leave a partial last block.
@pytest.mark.parametrize("nbytes", [(512 << 10) - 1, 512 << 10, (1 << 20) + 3, (4 << 20) - 4, (4 << 20) + 12345,
                                    (9 << 20) + 7])
def test_large_byte_copies_in_every_direction(nbytes):
    host = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
    device = host.to("kiln")  # host to device, the host waits
    assert torch.equal(device.cpu(), host)  # device to host
    copied = device.clone()  # device to device, queued
    pinned_back = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    pinned_back.copy_(copied, non_blocking=True)  # queued device to host
    queued_in = torch.empty(nbytes, dtype=torch.uint8, device="kiln")
    queued_in.copy_(host.pin_memory(), non_blocking=True)  # queued host to device
    torch.kiln.synchronize()
    assert torch.equal(pinned_back, host)
    assert torch.equal(queued_in.cpu(), host)
    # One storage copied onto itself: one memmove, not pieces.
    copied.copy_(copied)
    assert torch.equal(copied.cpu(), host)


def test_large_copies_at_one_and_two_threads():
    # A copy the host waits for splits over the initial thread's OpenMP team:
    # the result must not depend on the thread count.
    host = torch.randn(3 << 20)
    previous = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            assert torch.equal(host.to("kiln").cpu(), host)
    finally:
        torch.set_num_threads(previous)


def test_fill_keeps_negative_zero_and_rejects_overflow_at_the_call():
    tensor = torch.ones(4, device="kiln")
    tensor.fill_(-0.0)
    assert torch.equal(torch.signbit(tensor.cpu()), torch.ones(4, dtype=torch.bool))
    small = torch.zeros(3, dtype=torch.int8, device="kiln")
    with pytest.raises(RuntimeError, match="overflow"):
        small.fill_(300)
    assert torch.equal(small.cpu(), torch.zeros(3, dtype=torch.int8))
    strided = torch.zeros(4, 6, device="kiln")[:, ::2]
    strided.fill_(2.0)
    assert torch.equal(strided.cpu(), torch.full((4, 3), 2.0))


def test_every_backend_specific_view_op_is_native_and_aliases():
    base = torch.arange(8.0, device="kiln")
    windows = base.unfold(0, 2, 2)
    windows[1, 0] = -1
    assert base[2].item() == -1
    complex_values = torch.randn(3, dtype=torch.complex64).to("kiln")
    real_view = torch.view_as_real(complex_values)
    real_view[0, 0] = 5
    assert complex_values[0].item().real == 5
    back = torch.view_as_complex(real_view)
    assert back.untyped_storage().data_ptr() == complex_values.untyped_storage().data_ptr()
