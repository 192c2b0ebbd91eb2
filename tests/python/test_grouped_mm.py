"""torch.nn.functional.grouped_mm (aten._grouped_mm), what mixture-of-experts
layers call for their experts' products, on kiln against the CPU: the
jagged forms (2-d by 3-d, 2-d by 2-d for weight gradients), the batched form,
float32 and bfloat16, offsets with empty groups and rows past the last
offset, backward, and inside torch.compile(backend="kiln")."""
import pytest
import torch
import torch.nn.functional as F

import torch_kiln
from differential import compiled_only

OFFSETS = {
    "even": [8, 16, 24, 32],
    "uneven, rows past the end": [3, 17, 18, 30],
    "empty first and middle": [0, 12, 12, 32],
    "empty last, rows past the end": [10, 20, 28, 28],
}
TOLERANCE = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


def random(*shape, dtype, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def both(fn, *tensors, grad=True):
    """fn on CPU tensors and on kiln copies: (cpu result, kiln result, cpu grads, kiln grads)."""
    cpu = [tensor.clone().requires_grad_(grad and tensor.is_floating_point()) for tensor in tensors]
    kiln = [tensor.to("kiln").requires_grad_(grad and tensor.is_floating_point()) for tensor in tensors]
    expected, result = fn(*cpu), compiled_only(lambda: fn(*kiln))
    if not grad:
        return expected, result, [], []
    cotangent = random(*expected.shape, dtype=expected.dtype, seed=9)
    expected.backward(cotangent)
    compiled_only(lambda: result.backward(cotangent.to("kiln")))
    return expected, result, [t.grad for t in cpu if t.requires_grad], [t.grad for t in kiln if t.requires_grad]


def assert_same(expected, result, expected_grads, grads, dtype):
    torch.testing.assert_close(result.cpu(), expected.detach(), **TOLERANCE[dtype])
    for wanted, got in zip(expected_grads, grads):
        torch.testing.assert_close(got.cpu(), wanted, **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("offsets", list(OFFSETS))
def test_tokens_times_expert_weights(dtype, offsets):
    x, weight = random(32, 24, dtype=dtype, seed=0), random(4, 24, 40, dtype=dtype, seed=1)
    offs = torch.tensor(OFFSETS[offsets], dtype=torch.int32)

    def product(x, weight):
        return F.grouped_mm(x, weight, offs=offs.to(x.device))
    expected, result, expected_grads, grads = both(product, x, weight)
    end = OFFSETS[offsets][-1]  # rows past the last offset are left as they are, here and in x's
    # gradient: compare the others
    assert_same(expected[:end], result[:end], [expected_grads[0][:end], expected_grads[1]],
                [grads[0][:end], grads[1]], dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_weight_gradient_form_and_batched_form(dtype):
    offs = torch.tensor(OFFSETS["empty first and middle"], dtype=torch.int32)
    # 2-d by 2-d: the jagged dim is the shared one, as in an expert weight's gradient.
    a, b = random(24, 32, dtype=dtype, seed=2), random(32, 40, dtype=dtype, seed=3)
    expected, result, _, _ = both(lambda a, b: F.grouped_mm(a, b, offs=offs.to(a.device)), a, b, grad=False)
    assert result.shape == (4, 24, 40)
    assert_same(expected, result, [], [], dtype)
    # 3-d by 3-d: one product per group.
    a, b = random(4, 8, 24, dtype=dtype, seed=4), random(4, 24, 16, dtype=dtype, seed=5)
    assert_same(*both(lambda a, b: F.grouped_mm(a, b), a, b), dtype)


def test_inside_a_compiled_graph_forward_and_backward():
    # bfloat16: PyTorch 2.14's meta function of _grouped_mm (which torch.compile traces with) takes
    # bfloat16 and float16 only, on every device; eager float32 runs the composite loop of products.
    x, weight = random(32, 24, dtype=torch.bfloat16, seed=6), random(4, 24, 40, dtype=torch.bfloat16, seed=7)
    offs = torch.tensor(OFFSETS["uneven, rows past the end"], dtype=torch.int32)

    def layer(x, weight, offs):
        return F.grouped_mm(torch.relu(x), weight, offs=offs).square().sum()
    expected_x, expected_weight = x.clone().requires_grad_(), weight.clone().requires_grad_()
    layer(expected_x, expected_weight, offs).backward()
    kiln_x, kiln_weight = x.to("kiln").requires_grad_(), weight.to("kiln").requires_grad_()
    torch_kiln.clear_op_tracking()
    torch.compile(layer, backend="kiln")(kiln_x, kiln_weight, offs.to("kiln")).backward()
    assert torch_kiln.get_fallback_ops() == {}
    end = OFFSETS["uneven, rows past the end"][-1]
    torch.testing.assert_close(kiln_x.grad.cpu()[:end], expected_x.grad[:end], **TOLERANCE[torch.bfloat16])
    torch.testing.assert_close(kiln_weight.grad.cpu(), expected_weight.grad, **TOLERANCE[torch.bfloat16])
