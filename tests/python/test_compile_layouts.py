"""Traced convolutions on kiln take the layouts Kiln's kernels give
(fake_convolution.py): channels-last stays channels-last. Fused kernels
iterate in the order most of their operands are laid out in."""
import copy
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

import torch_kiln  # noqa: F401

CHANNELS_LAST = torch.channels_last
ARGUMENTS = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1)


# (batch, channels, height, width, output channels): ordinary, and shapes where a
# size-1 dimension makes the two layouts differ only in that dimension's stride.
SHAPES = [(2, 3, 8, 8, 4), (2, 3, 4, 5, 1), (1, 3, 4, 1, 2), (2, 1, 1, 5, 2)]


@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
@pytest.mark.parametrize("memory_format", [torch.contiguous_format, CHANNELS_LAST])
def test_fake_convolution_strides_are_the_kernels(memory_format, shape):
    batch, channels, height, width, outputs = shape
    x = torch.randn(batch, channels, height, width, device="kiln").contiguous(memory_format=memory_format)
    weight = torch.randn(outputs, channels, 3, 3, device="kiln").contiguous(memory_format=memory_format)
    grad = torch.randn(batch, outputs, height, width, device="kiln")
    mask = [True, True, True]
    real = torch.ops.aten.convolution(x, weight, None, *ARGUMENTS)
    real_grads = torch.ops.aten.convolution_backward(grad, x, weight, [outputs], *ARGUMENTS, mask)
    mode = FakeTensorMode()
    fake_x, fake_weight, fake_grad = (mode.from_tensor(t) for t in (x, weight, grad))
    with mode:
        fake = torch.ops.aten.convolution(fake_x, fake_weight, None, *ARGUMENTS)
        fake_grads = torch.ops.aten.convolution_backward(fake_grad, fake_x, fake_weight, [outputs], *ARGUMENTS,
                                                         mask)
    assert fake.stride() == real.stride()
    assert [t.stride() for t in fake_grads] == [t.stride() for t in real_grads]


def test_fake_convolution_on_the_cpu_is_pytorchs():
    # An NCHW input with a channels-last weight: the CPU's oneDNN result is
    # channels-last, where Kiln's rule (the input's format) would give NCHW.
    x = torch.randn(2, 3, 8, 8)
    weight = torch.randn(4, 3, 3, 3).contiguous(memory_format=CHANNELS_LAST)
    with FakeTensorMode() as mode:
        fake = torch.ops.aten.convolution(mode.from_tensor(x), mode.from_tensor(weight), None, *ARGUMENTS)
    assert fake.stride() == torch.ops.aten.convolution(x, weight, None, *ARGUMENTS).stride()


def test_compiled_channels_last_convolution_then_flatten():
    # Traced as NCHW, flatten became a view the channels-last result cannot take.
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, 8).contiguous(memory_format=CHANNELS_LAST)
    weight = torch.randn(4, 3, 3, 3)
    compiled = torch.compile(lambda x, w: F.conv2d(x, w, padding=1).flatten(1), backend="kiln")
    result = compiled(x.to("kiln"), weight.to("kiln"))
    torch.testing.assert_close(result.cpu(), F.conv2d(x, weight, padding=1).flatten(1))


def test_compiled_channels_last_network_trains_as_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 5))
    model = model.to(memory_format=CHANNELS_LAST)
    device_model = copy.deepcopy(model).to("kiln")
    compiled = torch.compile(device_model, backend="kiln")
    x = torch.randn(4, 3, 8, 8).contiguous(memory_format=CHANNELS_LAST)
    target = torch.randint(0, 5, (4,))
    loss = F.cross_entropy(model(x), target)
    loss.backward()
    device_loss = F.cross_entropy(compiled(x.to("kiln")), target.to("kiln"))
    device_loss.backward()
    torch.testing.assert_close(device_loss.cpu(), loss, rtol=1e-5, atol=1e-5)
    for name, parameter in model.named_parameters():
        device_parameter = dict(device_model.named_parameters())[name]
        torch.testing.assert_close(device_parameter.grad.cpu(), parameter.grad, rtol=1e-4, atol=1e-5)


POOL_THEN_FLATTEN = """
import sys
import torch
import torch_kiln


def pool_then_flatten(x):
    taps = [x[:, :, row::2, column::2] for row in (0, 1) for column in (0, 1)]
    return torch.flatten(torch.maximum(torch.maximum(taps[0], taps[1]), torch.maximum(taps[2], taps[3])), 1)


x = torch.randn(4, 32, 8, 8).contiguous(memory_format=torch.channels_last)
with torch.no_grad():
    result = torch.compile(pool_then_flatten, backend="kiln")(x.to("kiln"))
torch.testing.assert_close(result.cpu(), pool_then_flatten(x), rtol=0, atol=0)
"""


def innermost_strides_of_fused_kernels(tmp_path, program):
    """Runs `program` in a fresh process that dumps its kernels; returns, per
    fused kernel, each operand's stride along the kernel's innermost dim."""
    environment = dict(os.environ, KILN_DUMP_DIR=str(tmp_path), KILN_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, "-c", program], env=environment, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    launches = []
    for source in tmp_path.glob("fused_*.c"):
        for line in source.read_text().splitlines():
            if line.startswith("kernel fused:") and " strides=" in line:
                operands = line.split(" strides=")[1].split(";")
                launches.append([int(strides.split(",")[0]) for strides in operands])
    return launches


def test_a_fused_kernel_iterates_along_the_dim_most_of_its_operands_are_contiguous_in(tmp_path):
    # The CNN's last pool: four channels-last taps read, one NCHW result
    # written for the flatten. Iterating along the output's rows would gather
    # every tap 64 floats apart; along the channels the taps are read in order
    # and only the result is written with a stride (docs/design/compiled_path.md).
    launches = innermost_strides_of_fused_kernels(tmp_path, POOL_THEN_FLATTEN)
    scans = [innermost for innermost in launches if len(innermost) == 5]
    assert scans, launches
    assert scans == [[1, 1, 1, 1, 16]]


NCHW_POOL_TO_CHANNELS_LAST = """
import torch
import torch_kiln


def pool_relu_channels_last(x):
    taps = [x[:, :, row::2, column::2] for row in (0, 1) for column in (0, 1)]
    pooled = torch.maximum(torch.maximum(taps[0], taps[1]), torch.maximum(taps[2], taps[3]))
    return torch.relu(pooled).contiguous(memory_format=torch.channels_last)


x = torch.randn(4, 32, 16, 16)
with torch.no_grad():
    result = torch.compile(pool_relu_channels_last, backend="kiln")(x.to("kiln"))
torch.testing.assert_close(result.cpu(), pool_relu_channels_last(x), rtol=0, atol=0)
"""


def test_a_fused_kernel_with_no_contiguous_operand_steps_the_fewest_bytes(tmp_path):
    # The CNN's first pool under inference: four NCHW taps two floats apart,
    # one channels-last result for the next convolution. Along the channels
    # only the result is contiguous and each tap load leaves its cache line
    # (256 floats apart); along the rows the taps step 8 bytes and the result
    # 128, a quarter of the memory traffic (164 against 41 us in a C harness).
    launches = innermost_strides_of_fused_kernels(tmp_path, NCHW_POOL_TO_CHANNELS_LAST)
    scans = [innermost for innermost in launches if len(innermost) == 5]
    assert scans == [[2, 2, 2, 2, 32]], launches
