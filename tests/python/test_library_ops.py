"""Kiln's kernels for other libraries' custom ops (torch_kiln/library_ops.py):
transformers' grouped-product fallback, against the library's own
implementation on the CPU."""
import pytest
import torch

import torch_kiln
from torch_kiln import library_ops

moe = pytest.importorskip("transformers.integrations.moe")

EXPERTS, INNER, OUTER, ROWS = 4, 16, 24, 20
# Cumulative rows per expert: empty experts first, in the middle and last,
# rows past the last offset, all rows in one expert.
OFFSETS = [[5, 5, 12, 18], [0, 0, 0, ROWS], [3, 9, 15, ROWS], [0, 7, 7, 7]]
TOLERANCES = {torch.float32: {}, torch.float64: {}, torch.bfloat16: {"atol": 2e-2, "rtol": 2e-2}}


@pytest.fixture(autouse=True, scope="module")
def registered():
    library_ops.register_if_defined()
    assert "transformers::grouped_mm_fallback" in library_ops.registered()
    assert "transformers::grouped_mm_fallback_backward" in library_ops.registered()


def operands(dtype, offsets, transposed_weight=False):
    generator = torch.Generator().manual_seed(len(offsets) + sum(offsets))
    x = torch.randn(ROWS, INNER, generator=generator).to(dtype)
    if transposed_weight:  # [E, K, N] seen through a transpose, as nn.Linear weights are stored
        weight = torch.randn(EXPERTS, OUTER, INNER, generator=generator).to(dtype).transpose(1, 2)
    else:
        weight = torch.randn(EXPERTS, INNER, OUTER, generator=generator).to(dtype)
    grad = torch.randn(ROWS, OUTER, generator=generator).to(dtype)
    return x, weight, torch.tensor(offsets, dtype=torch.int32), grad


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("offsets", OFFSETS)
def test_forward_and_backward_match_the_library_on_the_cpu(dtype, offsets):
    x, weight, offs, grad = operands(dtype, offsets)
    expected = torch.ops.transformers.grouped_mm_fallback(x, weight, offs)
    expected_grads = torch.ops.transformers.grouped_mm_fallback_backward(x, weight, offs, grad)
    torch_kiln.clear_op_tracking()
    actual = torch.ops.transformers.grouped_mm_fallback(x.kiln(), weight.kiln(), offs.kiln())
    actual_grads = torch.ops.transformers.grouped_mm_fallback_backward(x.kiln(), weight.kiln(), offs.kiln(),
                                                                       grad.kiln())
    assert actual.device.type == "kiln"
    torch.testing.assert_close(actual.cpu(), expected, **TOLERANCES[dtype])
    for got, want in zip(actual_grads, expected_grads):
        torch.testing.assert_close(got.cpu(), want, **TOLERANCES[dtype])
    # Rows past the last offset, and the weight gradient of an empty expert, are zeros.
    assert actual[offsets[-1]:].cpu().count_nonzero() == 0
    assert torch_kiln.get_fallback_ops() == {}


def test_transposed_weights_and_int64_offsets():
    x, weight, offs, grad = operands(torch.float32, [4, 10, 10, 17], transposed_weight=True)
    offs = offs.long()
    expected = torch.ops.transformers.grouped_mm_fallback(x, weight, offs)
    actual = torch.ops.transformers.grouped_mm_fallback(x.kiln(), weight.kiln(), offs.kiln())
    torch.testing.assert_close(actual.cpu(), expected)


def test_operands_grouped_mm_refuses_take_the_library_loop():
    """aten::_grouped_mm wants 16-byte strides: 3 float32 columns are 12."""
    x = torch.randn(8, 4)
    weight = torch.randn(2, 4, 3)
    offs = torch.tensor([3, 8], dtype=torch.int32)
    expected = torch.ops.transformers.grouped_mm_fallback(x, weight, offs)
    actual = torch.ops.transformers.grouped_mm_fallback(x.kiln(), weight.kiln(), offs.kiln())
    torch.testing.assert_close(actual.cpu(), expected)


def test_float32_experts_compile_and_train_like_the_cpu():
    """Under torch.compile transformers calls the fallback for float32
    experts; kiln's graph runs it, forward and backward, as grouped products."""
    x, weight, offs, grad = operands(torch.float32, [5, 5, 12, 18])

    def experts(x, weight, offs):
        return torch.nn.functional.silu(torch.ops.transformers.grouped_mm_fallback(x, weight, offs))

    reference_weight = weight.clone().requires_grad_()
    reference = experts(x, reference_weight, offs)
    reference.backward(grad)

    kiln_weight = weight.kiln().requires_grad_()
    compiled = torch.compile(experts, backend="kiln")
    result = compiled(x.kiln(), kiln_weight, offs.kiln())
    result.backward(grad.kiln())
    torch.testing.assert_close(result.detach().cpu(), reference.detach())
    torch.testing.assert_close(kiln_weight.grad.cpu(), reference_weight.grad)


def test_registering_twice_is_harmless():
    before = library_ops.registered()
    library_ops.register_if_defined()
    assert library_ops.registered() == before
