"""_scaled_dot_product_flash_attention_for_cpu (forward and backward) on the
library path, eagerly and in compiled graphs, differentially against the CPU:
values, dtypes and the CPU's layouts; and scaled_dot_product_attention's
choice of it on kiln, as on the CPU."""
import pytest
import torch
import torch.nn.functional as F
import torch_kiln

from differential import FLOATING, check, compiled_only, make, to_kiln

flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
flash_backward = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward


def tolerance_for(dtype):
    return {torch.float16: (2e-3, 2e-3), torch.bfloat16: (2e-2, 2e-2),
            torch.float32: (1e-5, 1e-5), torch.float64: (1e-7, 1e-7)}[dtype]


def same_layout(expected, actual):
    for first, second in zip(expected, actual):
        assert first.stride() == second.stride(), (first.stride(), second.stride())


def run_both(fn, *inputs, dtype, **keywords):
    expected = fn(*inputs, **keywords)
    actual = compiled_only(lambda: fn(*to_kiln(inputs), **to_kiln(keywords)))
    rtol, atol = tolerance_for(dtype)
    for first, second in zip(expected, actual):
        assert second.device.type == "kiln" and first.dtype == second.dtype
        torch.testing.assert_close(second.cpu(), first, rtol=rtol, atol=atol)
    same_layout(expected, actual)
    return expected


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_flash_attention_forward_and_backward(dtype, causal, masked):
    query, key, value = make((2, 3, 6, 8), dtype), make((2, 3, 5, 8), dtype), make((2, 3, 5, 8), dtype)
    mask = make((6, 5), dtype) if masked else None
    output, logsumexp = run_both(flash, query, key, value, is_causal=causal, attn_mask=mask,
                                 dtype=dtype)
    grad = make(tuple(output.shape), dtype)
    run_both(flash_backward, grad, query, key, value, output, logsumexp, 0.0, causal,
             attn_mask=mask, dtype=dtype)


def test_flash_attention_layouts_scale_and_masked_rows():
    query = make((2, 4, 3, 8), torch.float32).transpose(1, 2)  # [B, L, H, E] in memory
    key, value = make((2, 3, 5, 8), torch.float32), make((2, 3, 5, 8), torch.float32)
    run_both(flash, query, key, value, scale=0.3, dtype=torch.float32)
    mask = torch.zeros(2, 1, 4, 5)
    mask[:, :, 0] = float("-inf")  # a fully masked row: output 0, logsumexp 0
    output, logsumexp = run_both(flash, query, key, value, attn_mask=mask, dtype=torch.float32)
    grad = make(tuple(output.shape), torch.float32)
    run_both(flash_backward, grad, query, key, value, output, logsumexp, 0.0, False,
             attn_mask=mask, dtype=torch.float32)
    # No keys: the CPU's kernel divides by zero (SIGFPE), so kiln is checked
    # alone: every row is fully masked.
    empty = make((1, 2, 0, 4), torch.float32).to("kiln")
    output, logsumexp = compiled_only(lambda: flash(make((1, 2, 3, 4), torch.float32).to("kiln"),
                                                    empty, empty))
    assert output.shape == (1, 2, 3, 4) and logsumexp.shape == (1, 2, 3)
    assert not output.cpu().any() and not logsumexp.cpu().any()


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_takes_the_cpus_flash_kernel_and_matches_it_exactly(causal):
    # As on the CPU, scaled_dot_product_attention picks the flash kernel
    # (one library call), not the math composition, and computes the same bits.
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(2, 4, 6, 8, generator=generator)
    key, value = (torch.randn(2, 2, 6, 8, generator=generator) for _ in range(2))  # grouped-query
    mask = torch.randn(2, 1, 6, 6, generator=generator)

    def attend(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=None if causal else m, is_causal=causal,
                                              enable_gqa=True)

    torch_kiln.clear_op_tracking()
    actual = attend(*(t.to("kiln") for t in (query, key, value, mask)))
    ran = torch_kiln.get_executed_ops()
    assert ran["aten::_scaled_dot_product_flash_attention_for_cpu"] == {"library": 1}, ran
    assert not any(op.startswith(("aten::bmm", "aten::_softmax", "aten::_safe_softmax")) for op in ran), ran
    assert torch.equal(actual.cpu(), attend(query, key, value, mask))


def test_sdpa_keeps_the_math_path_where_the_cpu_does():
    # Dropout in training: the CPU's choice is the math composition, on kiln too.
    query = make((2, 2, 5, 4), torch.float32).to("kiln").requires_grad_()
    torch_kiln.clear_op_tracking()
    out = F.scaled_dot_product_attention(query, query, query, dropout_p=0.5)
    out.sum().backward()
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" not in torch_kiln.get_executed_ops()
    assert not torch_kiln.get_fallback_ops() and query.grad.shape == query.shape


def test_compiled_sdpa_calls_the_flash_kernel():
    generator = torch.Generator().manual_seed(1)
    query, key, value = (torch.randn(2, 4, 7, 8, generator=generator) for _ in range(3))
    compiled = torch.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2,
                             backend="kiln", dynamic=False)
    with torch.no_grad():
        torch_kiln.clear_op_tracking()
        actual = compiled(*(t.to("kiln") for t in (query, key, value)))
    assert torch_kiln.get_executed_ops()["aten::_scaled_dot_product_flash_attention_for_cpu"] == {"library": 1}
    assert torch.equal(actual.cpu(), F.scaled_dot_product_attention(query, key, value, is_causal=True) * 2)


def test_flash_attention_errors():
    q = make((2, 3, 4, 8), torch.float32)
    check(flash, q, q, q, 0.5, message="dropout")
    check(flash, q.long(), q.long(), q.long(), message="integers")
    check(flash, q[0], q[0], q[0], message="3-D")
    check(flash, q, q, q[..., :4], message="head sizes differ")
    check(flash, q, q, q, attn_mask=make((4,), torch.float32), message="1-D mask")
    check(flash, q, q, q, attn_mask=make((4, 4), torch.float64), message="mask dtype")
    check(flash, q, q.double(), q, message="mixed dtypes")
    # Grouped-query attention needs the query's heads to be a multiple of
    # the key's, and one batch size: the CPU's kernel reads past them.
    three_heads = make((2, 3, 4, 8), torch.float32)
    two_heads = make((2, 2, 4, 8), torch.float32)
    one_batch = make((1, 3, 4, 8), torch.float32)
    for key in (two_heads, one_batch):
        with pytest.raises(RuntimeError, match="multiple"):
            flash(three_heads.to("kiln"), key.to("kiln"), key.to("kiln"))


def test_sdpa_training_step_stays_on_device():
    query = make((2, 2, 5, 4), torch.float32)
    key, value = make((2, 2, 5, 4), torch.float32), make((2, 2, 5, 4), torch.float32)

    def step(q, k, v):
        q, k, v = (t.clone().requires_grad_() for t in (q, k, v))
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.sum().backward()
        return out, q.grad, k.grad, v.grad

    compiled_only(lambda: check(step, query, key, value, tolerance=(1e-5, 1e-5)))


def test_compiled_flash_attention_returns_the_log_sum_exp():
    # PyTorch's decomposition returns the attention weights in its place;
    # the compiled graph calls Kiln's kernel instead.
    generator = torch.Generator().manual_seed(0)
    query, key, value = (torch.randn(2, 3, 4, 8, generator=generator) for _ in range(3))
    compiled = torch.compile(lambda q, k, v: flash(q, k, v, is_causal=True), backend="kiln", dynamic=False)
    output, logsumexp = compiled(*(t.to("kiln") for t in (query, key, value)))
    expected_output, expected_logsumexp = flash(query, key, value, is_causal=True)
    torch.testing.assert_close(output.cpu(), expected_output)
    torch.testing.assert_close(logsumexp.cpu(), expected_logsumexp)
