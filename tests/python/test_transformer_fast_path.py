"""The inference fast path of nn.TransformerEncoderLayer, nn.TransformerEncoder
and nn.MultiheadAttention on kiln (eval mode, no autograd): PyTorch takes it on
every device it lists, kiln included, through _transformer_encoder_layer_fwd
and _native_multi_head_attention (ATen's own kernels on kiln), whose inner ops
_transform_bias_rescale_qkv, _masked_softmax and _addmm_activation are kiln's.
Each case runs the same module on the CPU and on kiln and asserts that nothing
fell back to the CPU. With src_key_padding_mask, TransformerEncoder turns its
input into a nested tensor, which takes the same kernels on nested kiln
tensors."""
import copy

import pytest
import torch

import torch_kiln

aten = torch.ops.aten
TOLERANCE = {torch.float32: dict(atol=2e-5, rtol=1e-4), torch.float64: dict(atol=1e-12, rtol=1e-10),
             torch.float16: dict(atol=2e-3, rtol=2e-3), torch.bfloat16: dict(atol=1e-2, rtol=1e-2)}


def to_kiln(value):
    return value.to("kiln") if isinstance(value, torch.Tensor) else value


def compare(actual, expected, dtype):
    if expected is None:
        assert actual is None
        return
    assert actual.device.type == "kiln"
    if expected.is_nested:
        assert actual.is_nested
        actual, expected = actual.to_padded_tensor(0.0), expected.to_padded_tensor(0.0)
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **TOLERANCE[dtype])


def run_module(module, dtype, *inputs, fast_op=None, **keywords):
    """Runs `module` on the CPU and a copy on kiln under no_grad; compares the
    results, checks no op fell back and, with `fast_op`, that the fast path ran."""
    module = module.to(dtype).eval()
    # One conversion per distinct tensor: MultiheadAttention's fast path
    # needs query, key and value to be the same tensor object.
    converted = {}

    def convert(x, to):
        if not isinstance(x, torch.Tensor):
            return x
        return converted.setdefault((id(x), to), to(x))

    as_dtype = lambda x: x.to(dtype) if x.is_floating_point() else x  # noqa: E731
    inputs = [convert(x, as_dtype) for x in inputs]
    keywords = {k: convert(v, as_dtype) for k, v in keywords.items()}
    with torch.no_grad():
        expected = module(*inputs, **keywords)
        on_kiln = copy.deepcopy(module).to("kiln")
        torch_kiln.clear_op_tracking()
        actual = on_kiln(*[convert(x, to_kiln) for x in inputs], **{k: convert(v, to_kiln) for k, v in keywords.items()})
    assert torch_kiln.get_fallback_ops() == {}
    if fast_op is not None:
        assert fast_op in torch_kiln.get_executed_ops(), sorted(torch_kiln.get_executed_ops())
    for got, want in zip(*(((r,) if isinstance(r, torch.Tensor) or r is None else r) for r in (actual, expected))):
        compare(got, want, dtype)
    return actual, expected


def encoder_layer(seed=0, **options):
    torch.manual_seed(seed)
    options = {"d_model": 16, "nhead": 4, "dim_feedforward": 32, "dropout": 0.1, **options}
    return torch.nn.TransformerEncoderLayer(**options)


def source(batch_first=True, batch=3, length=5, seed=1):
    x = torch.randn(batch, length, 16, generator=torch.Generator().manual_seed(seed))
    return x if batch_first else x.transpose(0, 1).contiguous()


PADDING = torch.tensor([[False] * 5, [False, False, False, True, True], [True] * 5])  # last: fully padded


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer(dtype, batch_first, norm_first, activation):
    layer = encoder_layer(batch_first=batch_first, norm_first=norm_first, activation=activation)
    # Only batch_first layers take the fast path; the others run the module's
    # ordinary ops, also all on kiln.
    run_module(layer, dtype, source(batch_first),
               fast_op="aten::_transformer_encoder_layer_fwd" if batch_first else None)


@pytest.mark.parametrize("shape", [(0, 5, 16), (2, 0, 16)])
def test_encoder_layer_of_empty_input(shape):
    run_module(encoder_layer(batch_first=True), torch.float32, torch.randn(shape),
               fast_op="aten::_transformer_encoder_layer_fwd")


@pytest.mark.parametrize("mask", ["causal bool", "causal float", "padding", "causal and padding"])
def test_encoder_layer_masks(mask):
    length = 5
    causal = torch.triu(torch.ones(length, length, dtype=torch.bool), 1)
    keywords = {}
    if "causal" in mask:
        keywords["src_mask"] = causal if "float" not in mask else torch.zeros(length, length).masked_fill(causal, -1e9)
    if "padding" in mask:
        keywords["src_key_padding_mask"] = PADDING  # the fully padded row gives NaN, as on the CPU
    run_module(encoder_layer(batch_first=True), torch.float32, source(), fast_op="aten::_transformer_encoder_layer_fwd",
               **keywords)


@pytest.mark.parametrize("padding", [None, PADDING])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_transformer_encoder_of_several_layers(padding, dtype):
    """With a padding mask the encoder runs its layers on a nested tensor
    (enable_nested_tensor) and pads the result back with zeros."""
    layer = encoder_layer(batch_first=True, activation="gelu")
    encoder = torch.nn.TransformerEncoder(layer, num_layers=3, enable_nested_tensor=True,
                                          norm=torch.nn.LayerNorm(16))
    keywords = {} if padding is None else {"src_key_padding_mask": padding}
    actual, expected = run_module(encoder, dtype, source(), fast_op="aten::_transformer_encoder_layer_fwd",
                                  **keywords)
    if padding is not None:
        assert "aten::_nested_tensor_from_mask" in torch_kiln.get_executed_ops()


def multi_head_attention(seed=0):
    torch.manual_seed(seed)
    return torch.nn.MultiheadAttention(16, 4, batch_first=True)


@pytest.mark.parametrize("need_weights, average", [(False, True), (True, True), (True, False)])
@pytest.mark.parametrize("masks, dtype", [("none", torch.float32), ("padding", torch.float32),
                                          ("attention", torch.float32), ("both", torch.float32),
                                          ("both", torch.float64)])
def test_multi_head_attention(need_weights, average, masks, dtype):
    x = source()
    keywords = {"need_weights": need_weights, "average_attn_weights": average}
    if masks in ("padding", "both"):
        keywords["key_padding_mask"] = PADDING
    if masks in ("attention", "both"):
        keywords["attn_mask"] = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    actual, _ = run_module(multi_head_attention(), dtype, x, x, x,
                           fast_op="aten::_native_multi_head_attention", **keywords)
    if need_weights:
        assert actual[1].shape == ((3, 5, 5) if average else (3, 4, 5, 5))
    else:
        assert actual[1] is None


def test_multi_head_attention_of_a_nested_query():
    parts = [torch.randn(length, 16, generator=torch.Generator().manual_seed(length)) for length in (2, 5, 3)]
    query = torch.nested.nested_tensor(parts)
    run_module(multi_head_attention(), torch.float32, query, query, query, need_weights=False,
               fast_op="aten::_native_multi_head_attention")


# _masked_softmax against the CPU's kernel.

def masked_softmax_case(mask_type, shape, dim, dtype, generator):
    x = (torch.randn(shape, generator=generator) * 3).to(dtype)
    batch, _, length, _ = shape if len(shape) == 4 else (None, None, None, None)
    mask_shape = {0: (length, length), 1: (batch, length), 2: shape}[mask_type]
    mask = torch.rand(mask_shape, generator=generator) > 0.6
    if mask_type in (0, 1):
        mask[0] = True  # every position of some rows masked: NaN on the CPU
    else:
        mask.select(dim, 0).fill_(True)
        mask.select(dim, 1).fill_(True)
        mask.view(-1)[:1].fill_(True)
    return x, mask


def check_masked_softmax(x, mask, dim, mask_type):
    torch_kiln.clear_op_tracking()
    expected = torch._masked_softmax(x, mask, dim, mask_type)
    actual = torch._masked_softmax(x.to("kiln"), mask.to("kiln"), dim, mask_type)
    assert torch_kiln.get_fallback_ops() == {}
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **TOLERANCE[x.dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mask_type", [0, 1, 2])
def test_masked_softmax(dtype, mask_type):
    generator = torch.Generator().manual_seed(mask_type)
    for dim in (3, -1, 1, 2, None):
        x, mask = masked_softmax_case(mask_type, (2, 3, 6, 6), 3 if dim in (None, -1) else dim, dtype, generator)
        check_masked_softmax(x, mask, dim, mask_type)
    if mask_type == 2:  # the generic mask, other ranks
        for shape, dim in [((7,), 0), ((4, 9), 1), ((4, 9), 0), ((2, 3, 5), 1), ((2, 0, 3), 2)]:
            x = torch.randn(shape, generator=generator).to(dtype)
            check_masked_softmax(x, torch.rand(shape, generator=generator) > 0.5, dim, 2)
        check_masked_softmax(torch.tensor(2.0, dtype=dtype), torch.tensor(False), 0, None)
        check_masked_softmax(torch.tensor(2.0, dtype=dtype), torch.tensor(True), -1, 2)


def test_masked_softmax_of_strided_inputs_and_special_values():
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(2, 3, 6, 12, generator=generator)[..., ::2]  # not contiguous
    x[0, 0, 0, 1] = float("inf")
    x[0, 0, 1, 2] = float("-inf")
    x[1, 1, 1, 1] = float("nan")
    mask = torch.rand(6, 6, generator=generator) > 0.7
    mask[1, 1] = True  # hides the NaN in the rows of query 1
    check_masked_softmax(x, mask, 3, 0)
    check_masked_softmax(x, (torch.rand(2, 6, generator=generator) > 0.5), 3, 1)
    # A permuted (dense) input: the CPU writes its result in the input's
    # layout but in contiguous order, scrambling it; kiln's result is the
    # softmax of the input, which is the CPU's for the contiguous copy.
    y = torch.randn(4, 6, generator=generator).t()
    y_mask = torch.rand(6, 4, generator=generator) > 0.5
    expected = torch._masked_softmax(y.contiguous(), y_mask, 1, 2)
    torch.testing.assert_close(torch._masked_softmax(y.to("kiln"), y_mask.to("kiln"), 1, 2).cpu(), expected,
                               equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_masked_softmax_backward(dtype):
    generator = torch.Generator().manual_seed(6)
    for shape, dim in [((3, 7), 1), ((2, 3, 4, 4), 3), ((2, 3, 4, 4), 1), ((5,), None)]:
        output = torch.softmax(torch.randn(shape, generator=generator), -1).to(dtype)
        grad = torch.randn(shape, generator=generator).to(dtype)
        mask = torch.rand(shape, generator=generator) > 0.5
        torch_kiln.clear_op_tracking()
        expected = aten._masked_softmax_backward(grad, output, mask, dim)
        actual = aten._masked_softmax_backward(grad.to("kiln"), output.to("kiln"), mask.to("kiln"), dim)
        assert torch_kiln.get_fallback_ops() == {}
        torch.testing.assert_close(actual.cpu(), expected, **TOLERANCE[dtype])


def test_masked_softmax_autograd():
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(2, 2, 5, 5, generator=generator)
    mask = torch.rand(2, 2, 5, 5, generator=generator) > 0.6
    weight = torch.randn(2, 2, 5, 5, generator=generator)
    grads = []
    for device in ("cpu", "kiln"):
        leaf = x.detach().to(device, copy=True).requires_grad_()
        out = torch._masked_softmax(leaf, mask.to(device), 3, 2)
        out.nan_to_num(0).mul(weight.to(device)).sum().backward()
        grads.append(leaf.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])


def test_masked_softmax_errors_are_the_cpus():
    x = torch.randn(2, 2, 3, 3)
    cases = [
        ((x, torch.zeros(3, 3, dtype=torch.bool), 3, None), RuntimeError, "Mask Type should be defined"),
        ((x, torch.zeros(3, 3, dtype=torch.bool), 3, 7), RuntimeError, "Mask Type should be 0"),
        ((x, torch.zeros(2, 2, 3, 3), 3, 2), RuntimeError, "Mask should be a boolean tensor"),
        ((x, torch.zeros(2, 3, dtype=torch.bool), 3, 0), RuntimeError, r"mask_type == 0 mask shape should be \(L, L\)"),
        ((x, torch.zeros(3, 3, dtype=torch.bool), 3, 1), RuntimeError, r"mask_type == 1 mask shape should be \(B, L\)"),
        ((x, torch.zeros(2, 2, 3, 1, dtype=torch.bool), 3, 2), RuntimeError, "mask shape should match input shape"),
        ((x.int(), torch.zeros(2, 2, 3, 3, dtype=torch.bool), 3, 2), NotImplementedError, "not implemented for 'Int'"),
        ((x, torch.zeros(2, 2, 3, 3, dtype=torch.bool), 4, 2), IndexError, "Dimension out of range"),
    ]
    for arguments, error, message in cases:
        with pytest.raises(error, match=message):
            torch._masked_softmax(*arguments)
        with pytest.raises(error, match=message):
            torch._masked_softmax(*[to_kiln(a) for a in arguments])
    # Scores that are not square: the CPU's kernel reads past such a mask.
    for mask, mask_type in [(torch.zeros(3, 3, dtype=torch.bool), 0), (torch.zeros(2, 3, dtype=torch.bool), 1)]:
        with pytest.raises(RuntimeError, match=r"needs an input \[B, H, L, L\]"):
            torch._masked_softmax(torch.randn(2, 2, 3, 4, device="kiln"), mask.to("kiln"), 3, mask_type)
    grad = torch.randn(3, 4, device="kiln")
    with pytest.raises(RuntimeError, match="Mask shape should match grad shape"):
        aten._masked_softmax_backward(grad, grad, torch.zeros(3, 3, dtype=torch.bool, device="kiln"), 1)
    with pytest.raises(RuntimeError, match="same device"):
        torch._masked_softmax(x.to("kiln"), torch.zeros(2, 2, 3, 3, dtype=torch.bool), 3, 2)


# _transform_bias_rescale_qkv and _addmm_activation against the CPU's kernels.

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_transform_bias_rescale_qkv(dtype):
    generator = torch.Generator().manual_seed(8)
    wide = torch.randn(2, 5, 3 * 24 + 4, generator=generator).to(dtype)
    for qkv in (wide[..., :72].contiguous(), wide[..., :72]):
        bias = torch.randn(72, generator=generator).to(dtype)
        torch_kiln.clear_op_tracking()
        expected = torch._transform_bias_rescale_qkv(qkv, bias, 4)
        actual = torch._transform_bias_rescale_qkv(qkv.to("kiln"), bias.to("kiln"), 4)
        assert torch_kiln.get_fallback_ops() == {}
        for got, want in zip(actual, expected):
            assert got.shape == want.shape == (qkv.shape[0], 4, 5, 6) and got.is_contiguous()
            torch.testing.assert_close(got.cpu(), want, atol=0, rtol=0)
        # q, k and v are views of one buffer, as the CPU's are.
        assert actual[0].untyped_storage().data_ptr() == actual[2].untyped_storage().data_ptr()
    # An empty batch (the CPU's kernel crashes on one).
    empty = torch._transform_bias_rescale_qkv(torch.zeros(0, 5, 72, dtype=dtype, device="kiln"), bias.to("kiln"), 4)
    assert [tuple(t.shape) for t in empty] == [(0, 4, 5, 6)] * 3
    with pytest.raises(RuntimeError, match="divide evenly by num_heads"):
        torch._transform_bias_rescale_qkv(wide[..., :72].to("kiln"), bias.to("kiln"), 5)


@pytest.mark.parametrize("use_gelu", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_addmm_activation(use_gelu, dtype):
    generator = torch.Generator().manual_seed(9)
    bias, mat1, mat2 = (torch.randn(shape, generator=generator).to(dtype) for shape in [(7,), (4, 5), (5, 7)])
    torch_kiln.clear_op_tracking()
    expected = aten._addmm_activation(bias, mat1, mat2, use_gelu=use_gelu)
    actual = aten._addmm_activation(bias.to("kiln"), mat1.to("kiln"), mat2.to("kiln"), use_gelu=use_gelu)
    assert torch_kiln.get_fallback_ops() == {}
    torch.testing.assert_close(actual.cpu(), expected, **TOLERANCE[dtype])
