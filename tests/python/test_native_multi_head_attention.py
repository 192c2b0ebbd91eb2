"""_native_multi_head_attention on kiln against the CPU's kernel: the fused op
nn.MultiheadAttention and nn.TransformerEncoderLayer take in inference (eval
mode, no autograd, batch first). torchvision's ViT fell back to the CPU on it."""
import pytest
import torch

import torch_kiln

aten = torch.ops.aten


def weights(embed, generator):
    def random(*shape):
        return torch.randn(*shape, generator=generator) * 0.3
    return random(3 * embed, embed), random(3 * embed), random(embed, embed), random(embed)


def run_both(*arguments, **keywords):
    torch_kiln.clear_op_tracking()
    expected = aten._native_multi_head_attention(*arguments, **keywords)
    moved = [value.to("kiln") if isinstance(value, torch.Tensor) else value for value in arguments]
    moved_keywords = {key: value.to("kiln") if isinstance(value, torch.Tensor) else value
                      for key, value in keywords.items()}
    actual = aten._native_multi_head_attention(*moved, **moved_keywords)
    assert not torch_kiln.get_fallback_ops(), torch_kiln.get_fallback_ops()
    for got, want in zip(actual, expected):
        if want is None:  # the weights, without need_weights
            assert got is None
            continue
        assert got.device.type == "kiln"
        torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-4, equal_nan=True)
    return actual


@pytest.mark.parametrize("need_weights, average", [(False, True), (True, True), (True, False)])
def test_self_attention(need_weights, average):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 7, 16, generator=generator)
    output, attention = run_both(x, x, x, 16, 4, *weights(16, generator), None, need_weights, average)
    if not need_weights:
        assert attention is None
    else:
        assert attention.shape == ((3, 7, 7) if average else (3, 4, 7, 7))


def test_distinct_key_and_value_tensors():
    generator = torch.Generator().manual_seed(1)
    query, memory = torch.randn(2, 5, 8, generator=generator), torch.randn(2, 5, 8, generator=generator)
    run_both(query, memory, memory.clone(), 8, 2, *weights(8, generator), None, True, True)
    # Other lengths the CPU's kernel refuses; so does kiln's, with its words.
    with pytest.raises(RuntimeError, match="shapes to match"):
        kiln = [t.to("kiln") for t in weights(8, generator)]
        aten._native_multi_head_attention(query.to("kiln"), memory[:, :3].to("kiln"), memory[:, :3].to("kiln"),
                                          8, 2, *kiln)


@pytest.mark.parametrize("mask_type", [0, 1, 2])
def test_boolean_masks_of_each_type_with_a_fully_masked_row(mask_type):
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(2, 6, 8, generator=generator)
    shape = {0: (6, 6), 1: (2, 6), 2: (2, 2, 6, 6)}[mask_type]
    mask = torch.rand(shape, generator=generator) > 0.6
    if mask_type == 0:
        mask[3] = True  # a query that may attend to nothing: NaN, as on the CPU
    run_both(x, x, x, 8, 2, *weights(8, generator), mask, True, False, mask_type)


def test_errors_name_the_op_and_what_was_wrong():
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(2, 4, 8, device="kiln")
    qkv_weight, qkv_bias, proj_weight, proj_bias = (t.to("kiln") for t in weights(8, generator))
    with pytest.raises(RuntimeError, match="must divide evenly by `num_heads`"):
        aten._native_multi_head_attention(x, x, x, 8, 3, qkv_weight, qkv_bias, proj_weight, proj_bias)
    with pytest.raises(RuntimeError, match="kiln|device"):
        aten._native_multi_head_attention(x, x, x, 8, 2, qkv_weight.cpu(), qkv_bias, proj_weight, proj_bias)


def test_transformer_encoder_layer_fast_path_runs_on_kiln():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True).eval()
    attention = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    with torch.no_grad():
        expected = (layer(x), attention(x, x, x, key_padding_mask=padding)[0])
        layer.to("kiln"), attention.to("kiln")
        torch_kiln.clear_op_tracking()
        actual = (layer(x.to("kiln")), attention(x.to("kiln"), x.to("kiln"), x.to("kiln"),
                                                 key_padding_mask=padding.to("kiln"))[0])
    assert "aten::_native_multi_head_attention" not in torch_kiln.get_fallback_ops()
    for got, want in zip(actual, expected):
        torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-4)
