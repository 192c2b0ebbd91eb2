"""The library path: the matmul family runs PyTorch's CPU BLAS on device
memory, queued on the stream. Differential against the CPU over dtypes,
transposed and broadcast inputs, zero sizes, out= and in-place forms."""
import pytest
import torch

import torch_kiln

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64]


def sample(shape, dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype)
    return torch.randint(-5, 5, shape, generator=generator).to(dtype)


def kiln(tensor):
    return tensor.to("kiln")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((0, 4), (4, 5)), ((3, 0), (0, 5)),
                                    ((1, 1), (1, 1))])
def test_mm(dtype, shapes):
    a, b = sample(shapes[0], dtype), sample(shapes[1], dtype, seed=1)
    torch.testing.assert_close(torch.mm(kiln(a), kiln(b)).cpu(), torch.mm(a, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_mm_of_transposed_and_sliced_inputs(dtype):
    a, b = sample((6, 4), dtype), sample((8, 6), dtype, seed=1)
    expected = torch.mm(a.t(), b[::2].t())            # transposed, and sliced + transposed
    result = torch.mm(kiln(a).t(), kiln(b)[::2].t())
    torch.testing.assert_close(result.cpu(), expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
@pytest.mark.parametrize("bias_shape", [(3, 5), (5,), (1, 5), (3, 1), ()])
def test_addmm_broadcasts_the_bias_and_scales(dtype, bias_shape):
    bias, a, b = sample(bias_shape, dtype), sample((3, 4), dtype, 1), sample((4, 5), dtype, 2)
    beta, alpha = (2, 3) if dtype == torch.int64 else (0.5, 1.5)
    expected = torch.addmm(bias, a, b, beta=beta, alpha=alpha)
    result = torch.addmm(kiln(bias), kiln(a), kiln(b), beta=beta, alpha=alpha)
    torch.testing.assert_close(result.cpu(), expected)


def test_addmm_with_beta_zero_ignores_nan_in_the_bias():
    bias = torch.full((2, 2), float("nan"))
    a, b = sample((2, 3), torch.float32), sample((3, 2), torch.float32, 1)
    result = torch.addmm(kiln(bias), kiln(a), kiln(b), beta=0)
    torch.testing.assert_close(result.cpu(), a @ b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_bmm_and_baddbmm(dtype):
    a, b = sample((2, 3, 4), dtype), sample((2, 4, 5), dtype, 1)
    bias = sample((3, 5), dtype, 2)
    torch.testing.assert_close(torch.bmm(kiln(a), kiln(b)).cpu(), torch.bmm(a, b))
    torch.testing.assert_close(
        torch.baddbmm(kiln(bias), kiln(a), kiln(b), beta=0.5, alpha=2).cpu(),
        torch.baddbmm(bias, a, b, beta=0.5, alpha=2))
    torch.testing.assert_close(torch.bmm(kiln(a).transpose(1, 2).contiguous().transpose(1, 2),
                                         kiln(b)).cpu(), torch.bmm(a, b))


def test_out_and_in_place_forms():
    a, b = sample((3, 4), torch.float32), sample((4, 5), torch.float32, 1)
    out = torch.empty(0, device="kiln")
    torch.mm(kiln(a), kiln(b), out=out)
    torch.testing.assert_close(out.cpu(), a @ b)
    strided_out = torch.zeros(5, 3, device="kiln").t()
    torch.mm(kiln(a), kiln(b), out=strided_out)
    torch.testing.assert_close(strided_out.cpu(), a @ b)
    accumulator = torch.ones(3, 5)
    device_accumulator = kiln(accumulator)
    device_accumulator.addmm_(kiln(a), kiln(b), alpha=2)
    torch.testing.assert_close(device_accumulator.cpu(), accumulator.addmm(a, b, alpha=2))


def test_composites_reach_the_library_path():
    torch_kiln.clear_op_tracking()
    x, weight, bias = sample((2, 3, 4), torch.float32), sample((5, 4), torch.float32, 1), \
        sample((5,), torch.float32, 2)
    torch.testing.assert_close(
        torch.nn.functional.linear(kiln(x), kiln(weight), kiln(bias)).cpu(),
        torch.nn.functional.linear(x, weight, bias))
    torch.testing.assert_close(torch.matmul(kiln(x), kiln(weight).t()).cpu(),
                               torch.matmul(x, weight.t()))
    executed = torch_kiln.get_executed_ops()
    assert any(paths.get("library") for paths in executed.values())
    assert not any(name.startswith(("aten::mm", "aten::addmm", "aten::bmm"))
                   for name in torch_kiln.get_fallback_ops())


def test_bad_calls_raise_at_once_and_leave_the_output_untouched():
    a, b = kiln(sample((3, 4), torch.float32)), kiln(sample((5, 6), torch.float32))
    out = torch.full((3, 6), 7.0, device="kiln")
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 5x6\)"):
        torch.mm(a, b, out=out)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.mm(a, kiln(sample((4, 2), torch.float64)))
    with pytest.raises(RuntimeError, match="must be a matrix"):
        torch.mm(a, kiln(sample((4,), torch.float32)))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        torch.mm(a, kiln(sample((4, 6), torch.float32)), out=torch.empty(3, 6, dtype=torch.float64,
                                                                           device="kiln"))
    with pytest.raises(RuntimeError, match="must be broadcastable"):
        torch.addmm(kiln(sample((4,), torch.float32)), a, kiln(sample((4, 6), torch.float32)))
    with pytest.raises(RuntimeError, match="same device"):
        torch.mm(a, sample((4, 2), torch.float32))
    torch.kiln.synchronize()
    assert torch.equal(out.cpu(), torch.full((3, 6), 7.0))


def test_large_matmul_is_queued_and_ordered():
    a, b = sample((256, 256), torch.float32), sample((256, 256), torch.float32, 1)
    device_a, device_b = kiln(a), kiln(b)
    product = device_a @ device_b              # large: queued on the stream
    product.add_(1)                            # ordered after it
    torch.testing.assert_close(product.cpu(), a @ b + 1)


CONVOLUTIONS = [
    ("conv1d", (2, 4, 9), dict(out_channels=6, kernel_size=3, stride=2, padding=1)),
    ("conv2d", (2, 3, 8, 8), dict(out_channels=4, kernel_size=3, padding=1)),
    ("conv2d groups dilation", (1, 4, 9, 9), dict(out_channels=8, kernel_size=3, dilation=2,
                                                  groups=2)),
    ("conv2d no bias", (2, 3, 7, 5), dict(out_channels=2, kernel_size=(3, 2), bias=False)),
    ("conv3d", (1, 2, 5, 5, 5), dict(out_channels=3, kernel_size=2)),
    ("conv_transpose2d", (2, 4, 5, 5), dict(out_channels=3, kernel_size=3, stride=2,
                                            output_padding=1)),
]


def make_convolution(name, in_channels, options):
    options = dict(options)
    out_channels = options.pop("out_channels")
    if name.startswith("conv_transpose2d"):
        return torch.nn.ConvTranspose2d(in_channels, out_channels, **options)
    layer = {"conv1d": torch.nn.Conv1d, "conv2d": torch.nn.Conv2d,
             "conv3d": torch.nn.Conv3d}[name.split()[0]]
    return layer(in_channels, out_channels, **options)


@pytest.mark.parametrize("name,shape,options", CONVOLUTIONS, ids=[c[0] for c in CONVOLUTIONS])
def test_convolution_forward_and_backward(name, shape, options):
    torch.manual_seed(0)
    layer = make_convolution(name, shape[1], options)
    device_layer = make_convolution(name, shape[1], options).to("kiln")
    device_layer.load_state_dict(layer.state_dict())
    x = torch.randn(shape, requires_grad=True)
    device_x = x.detach().to("kiln").requires_grad_()
    torch_kiln.clear_op_tracking()
    expected = layer(x)
    result = device_layer(device_x)
    torch.testing.assert_close(result.cpu(), expected, rtol=1e-5, atol=1e-5)
    expected.square().sum().backward()
    result.square().sum().backward()
    torch.testing.assert_close(device_x.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)
    for on_device, on_cpu in zip(device_layer.parameters(), layer.parameters()):
        torch.testing.assert_close(on_device.grad.cpu(), on_cpu.grad, rtol=1e-4, atol=1e-5)
    executed = torch_kiln.get_executed_ops()
    assert executed["aten::convolution"] == {"library": 1}
    assert executed["aten::convolution_backward"] == {"library": 1}


def test_channels_last_convolution_keeps_its_layout():
    x = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)
    weight = torch.randn(4, 3, 3, 3)
    result = torch.nn.functional.conv2d(kiln(x), kiln(weight), padding=1)
    assert result.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(result.cpu(), torch.nn.functional.conv2d(x, weight, padding=1))


# Small 2D convolutions are computed straight into the device output by
# PyTorch's im2col convolution, the others by oneDNN and copied
# (writes_output_directly in convolution.cc). Each row below takes the path its
# comment names; both must match PyTorch's CPU convolution.
DIRECT_CONVOLUTIONS = [
    # (input shape, weight shape, stride, padding, input layout, weight layout, dtype)
    # direct: rows of 16 output columns, NCHW
    ((2, 3, 16, 16), (4, 3, 3, 3), 1, 1, "contiguous", "contiguous", torch.float32),
    ((2, 5, 9, 20), (6, 5, 3, 2), (2, 1), (1, 0), "contiguous", "contiguous", torch.float32),
    # direct: 16 input channels, channels last (from the input, the weight or both)
    ((2, 16, 6, 6), (4, 16, 3, 3), 1, 1, "channels_last", "channels_last", torch.float32),
    ((2, 16, 6, 6), (4, 16, 3, 3), 1, 1, "channels_last", "contiguous", torch.float32),
    ((2, 16, 9, 9), (4, 16, 3, 3), 2, 1, "channels_last", "channels_last", torch.float32),
    # oneDNN: a channels-last weight makes that convolution write channels last,
    # while the device output follows the NCHW input
    ((2, 16, 6, 6), (4, 16, 3, 3), 1, 1, "contiguous", "channels_last", torch.float32),
    # direct: a 1x1 kernel, stride 1, no padding, needs no columns
    ((3, 8, 6, 6), (5, 8, 1, 1), 1, 0, "contiguous", "contiguous", torch.float32),
    ((3, 8, 6, 6), (5, 8, 1, 1), 1, 0, "channels_last", "channels_last", torch.float32),
    ((1, 4, 1, 1), (3, 4, 1, 1), 1, 0, "channels_last", "contiguous", torch.float32),
    # oneDNN: short rows (3 input channels channels last, 8 or 3 output columns)
    ((2, 3, 8, 8), (4, 3, 3, 3), 1, 1, "channels_last", "channels_last", torch.float32),
    ((2, 3, 8, 8), (4, 3, 3, 3), 1, 1, "contiguous", "contiguous", torch.float32),
    ((3, 8, 6, 6), (5, 8, 1, 1), 2, 0, "contiguous", "contiguous", torch.float32),
    # direct: an input in neither layout (height and width swapped in memory)
    ((2, 3, 16, 16), (4, 3, 3, 3), 1, 1, "permuted", "contiguous", torch.float32),
    # direct: double, whatever its size (oneDNN does not take it)
    ((2, 3, 8, 8), (4, 3, 3, 3), 1, 1, "contiguous", "contiguous", torch.float64),
    ((2, 3, 8, 8), (4, 3, 3, 3), 1, 1, "channels_last", "channels_last", torch.float64),
    # oneDNN: over 1 MiB of columns
    ((8, 32, 24, 24), (8, 32, 3, 3), 1, 1, "contiguous", "contiguous", torch.float32),
    ((8, 32, 24, 24), (8, 32, 3, 3), 1, 1, "channels_last", "channels_last", torch.float32),
]


def in_layout(tensor, layout):
    if layout == "channels_last":
        return tensor.to(memory_format=torch.channels_last)
    if layout == "permuted":  # neither layout: height and width swapped in memory
        return tensor.transpose(2, 3).contiguous().transpose(2, 3)
    return tensor


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("input_shape,weight_shape,stride,padding,input_layout,weight_layout,dtype",
                         DIRECT_CONVOLUTIONS)
def test_convolution_layouts_strides_and_sizes_match_the_cpu(input_shape, weight_shape, stride, padding,
                                                            input_layout, weight_layout, dtype, bias):
    torch.manual_seed(0)
    x = in_layout(torch.randn(input_shape, dtype=dtype), input_layout)
    weight = in_layout(torch.randn(weight_shape, dtype=dtype), weight_layout)
    b = torch.randn(weight_shape[0], dtype=dtype) if bias else None
    expected = torch.nn.functional.conv2d(x, weight, b, stride=stride, padding=padding)
    device_x, device_weight = in_layout(kiln(x), input_layout), in_layout(kiln(weight), weight_layout)
    assert device_x.stride() == x.stride() and device_weight.stride() == weight.stride()
    result = torch.nn.functional.conv2d(device_x, device_weight, None if b is None else kiln(b),
                                        stride=stride, padding=padding)
    assert result.shape == expected.shape
    torch.testing.assert_close(result.cpu(), expected, rtol=1e-5, atol=1e-5)


def test_convolution_takes_one_value_for_both_dims():
    # aten::convolution accepts stride, padding and dilation of one element.
    x, weight, bias = torch.randn(2, 16, 18, 18), torch.randn(4, 16, 3, 3), torch.randn(4)
    arguments = ([1], [1], [1], False, [0], 1)
    result = torch.ops.aten.convolution(kiln(x), kiln(weight), kiln(bias), *arguments)
    torch.testing.assert_close(result.cpu(), torch.ops.aten.convolution(x, weight, bias, *arguments),
                               rtol=1e-5, atol=1e-5)


def test_bad_convolution_raises_at_the_call():
    # PyTorch's shape checks run on meta tensors before anything is queued.
    with pytest.raises(RuntimeError, match="(?i)channel"):
        torch.nn.functional.conv2d(torch.randn(1, 3, 5, 5, device="kiln"),
                                   torch.randn(2, 4, 3, 3, device="kiln"))
    assert torch.kiln.current_stream().query()


@pytest.mark.parametrize("batch", [2, 0])
@pytest.mark.parametrize("needs", ["bias", "weight and bias", "all"])
def test_convolution_bias_gradient_is_the_sum_of_the_output_gradient(batch, needs):
    # The library path computes the bias gradient apart from oneDNN's weight
    # gradient (convolution.cc); each subset of gradients must still match.
    torch.manual_seed(0)
    layer = torch.nn.Conv2d(3, 5, 3, padding=1)
    device_layer = torch.nn.Conv2d(3, 5, 3, padding=1).to("kiln")
    device_layer.load_state_dict(layer.state_dict())
    for module in (layer, device_layer):
        module.weight.requires_grad_(needs != "bias")
    x = torch.randn(batch, 3, 6, 7, requires_grad=needs == "all")
    device_x = x.detach().to("kiln").requires_grad_(needs == "all")
    grad = torch.randn(batch, 5, 6, 7)
    layer(x).backward(grad)
    device_layer(device_x).backward(grad.to("kiln"))
    torch.testing.assert_close(device_layer.bias.grad.cpu(), layer.bias.grad, rtol=1e-5, atol=1e-5)
    if needs != "bias":
        torch.testing.assert_close(device_layer.weight.grad.cpu(), layer.weight.grad, rtol=1e-4, atol=1e-5)
    else:
        assert device_layer.weight.grad is None
    if needs == "all":
        torch.testing.assert_close(device_x.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)
