"""Inference graphs run their 2-d convolutions channels-last
(torch_kiln/compile/passes/channels_last.py); training graphs keep the user's layout.
Results, and the strides the caller gets, are eager's."""
import pytest
import torch
from torch.nn import functional

import torch_kiln
from torch_kiln.compile.backend import kiln
from torch_kiln.models import MODELS


def compile_capturing(function):
    """torch.compile with the kiln backend, keeping the Dynamo graphs it got."""
    graphs = []

    def backend(gm, example_inputs):
        compiled = kiln(gm, example_inputs)
        graphs.append(gm.code)
        return compiled

    return torch.compile(function, backend=backend), graphs


def block(x, weight, bias):
    return torch.relu(functional.conv2d(x, weight, bias, padding=1))


def block_inputs(seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 8, 8, generator=generator), torch.randn(4, 3, 3, 3, generator=generator),
            torch.randn(4, generator=generator))


def test_inference_convolutions_run_channels_last_and_return_eagers_strides(fresh_compile_state):
    inputs = block_inputs()
    compiled, graphs = compile_capturing(block)
    with torch.no_grad():
        result = compiled(*(x.to("kiln") for x in inputs))
    expected = block(*inputs)
    torch.testing.assert_close(result.cpu(), expected, rtol=1e-4, atol=1e-4)
    assert "torch.channels_last" in graphs[0]
    assert result.stride() == expected.stride()  # NCHW, as eager gives it


def test_training_graphs_keep_the_users_layout(fresh_compile_state):
    inputs = block_inputs(1)
    compiled, graphs = compile_capturing(block)
    kiln_inputs = [x.to("kiln").requires_grad_() for x in inputs]
    result = compiled(*kiln_inputs)
    assert "channels_last" not in graphs[0]
    cpu_inputs = [x.clone().requires_grad_() for x in inputs]
    expected = block(*cpu_inputs)
    torch.testing.assert_close(result.cpu(), expected.detach(), rtol=1e-4, atol=1e-4)
    result.sum().backward()
    expected.sum().backward()
    for kiln_input, cpu_input in zip(kiln_inputs, cpu_inputs):
        torch.testing.assert_close(kiln_input.grad.cpu(), cpu_input.grad, rtol=1e-4, atol=1e-4)


def test_the_cnns_compiled_inference_matches_eager(fresh_compile_state):
    spec = MODELS["cnn"]
    torch.manual_seed(0)
    model = spec.make_model().eval()
    images = spec.make_batch(torch.Generator().manual_seed(1))[0]
    with torch.no_grad():
        expected = model(images)
        compiled, graphs = compile_capturing(model.to("kiln"))
        result = compiled(images.to("kiln"))
    torch.testing.assert_close(result.cpu(), expected, rtol=1e-4, atol=1e-4)
    # The second convolution's input and weight; the first (3 channels, rows of
    # 16) is computed straight into device memory only as traced, in NCHW.
    assert graphs[0].count("torch.channels_last") == 2


# (input shape, weight shape, padding, converted): whether the pass makes the
# convolution channels-last. It leaves one that Kiln computes straight into
# device memory as traced but would not in channels-last (convolution.cc).
LAYOUT_CHOICES = [
    ((16, 3, 16, 16), (16, 3, 3, 3), 1, False),   # direct in NCHW (rows of 16) only
    ((16, 16, 8, 8), (32, 16, 3, 3), 1, True),    # direct in channels-last (16 channels) only
    ((64, 3, 64, 64), (16, 3, 3, 3), 1, True),    # oneDNN either way (28 MiB of columns)
    ((16, 3, 16, 16), (16, 3, 3, 3), "same", True),  # padding the pass does not judge
]


@pytest.mark.parametrize("input_shape,weight_shape,padding,converted", LAYOUT_CHOICES)
def test_a_convolution_computed_directly_only_as_traced_keeps_its_layout(fresh_compile_state, input_shape,
                                                                         weight_shape, padding, converted):
    generator = torch.Generator().manual_seed(2)
    x, weight = torch.randn(input_shape, generator=generator), torch.randn(weight_shape, generator=generator)
    compiled, graphs = compile_capturing(lambda x, weight: functional.conv2d(x, weight, padding=padding))
    with torch.no_grad():
        result = compiled(x.to("kiln"), weight.to("kiln"))
    torch.testing.assert_close(result.cpu(), functional.conv2d(x, weight, padding=padding), rtol=1e-4, atol=1e-4)
    assert ("torch.channels_last" in graphs[0]) == converted
