"""scaled_dot_product_attention decomposes (on every device but CUDA) into
matmuls, softmax and masking: on kiln it must match the CPU, forward and
backward, with softmax compiled."""
import pytest
import torch
import torch.nn.functional as F

import torch_kiln
from differential import assert_same, make, to_kiln


def attention_and_grads(q, k, v, **keywords):
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out = F.scaled_dot_product_attention(*leaves, **keywords)
    out.backward(torch.ones_like(out))
    return [out.detach()] + [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_sdpa_matches_the_cpu(causal):
    q, k, v = (make((2, 3, 8, 16), torch.float32, low=-1, high=1) for _ in range(3))
    expected = attention_and_grads(q, k, v, is_causal=causal, dropout_p=0.0)
    torch_kiln.clear_op_tracking()
    actual = attention_and_grads(*to_kiln([q, k, v]), is_causal=causal, dropout_p=0.0)
    fallbacks = torch_kiln.get_fallback_ops()
    assert_same(expected, actual, tolerance=(1e-4, 1e-5))
    for name in fallbacks:
        assert "softmax" not in name, fallbacks


def test_sdpa_with_a_mask():
    q, k, v = (make((2, 4, 6, 8), torch.float32, low=-1, high=1) for _ in range(3))
    mask = torch.rand(6, 6, generator=torch.Generator().manual_seed(3)) > 0.3
    mask.fill_diagonal_(True)
    expected = attention_and_grads(q, k, v, attn_mask=mask)
    actual = attention_and_grads(*to_kiln([q, k, v]), attn_mask=mask.to("kiln"))
    assert_same(expected, actual, tolerance=(1e-4, 1e-5))
