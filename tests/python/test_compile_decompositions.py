"""The kiln backend's own decompositions (torch_kiln/compile/passes/decompositions.py):
max_pool2d_with_indices with non-overlapping windows as a scan over strided
views, var_mean in two passes, _safe_softmax from the softmax's own maximum,
and batch norm through PyTorch's decompositions. Each is compared with ATen's
CPU kernel, directly (on CPU tensors) and through torch.compile on kiln, where
values and indices must be exactly ATen's."""
import math

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn import functional

import torch_kiln
from torch_kiln.compile.passes import decompositions

aten = torch.ops.aten


pytestmark = pytest.mark.usefixtures("fresh_compile_state")


def pool_input(shape, dtype=torch.float32, seed=0):
    """Values with ties, NaNs, infinities and all-lowest windows, where a
    scan's order decides the index."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=generator).to(dtype)  # many ties
    flat = x.view(-1)
    count = flat.numel()
    if count >= 16:
        flat[1::7] = float("nan")
        flat[2::11] = float("-inf")
        flat[3::13] = float("inf")
        flat[:4] = float("-inf")  # one whole first window at the lowest value
    return x


POOL_CASES = [
    ((2, 3, 8, 8), (2, 2)),
    ((2, 3, 9, 7), (2, 2)),      # odd sizes: the last row and column are dropped
    ((3, 6, 6), (3, 3)),         # no batch dim
    ((1, 2, 8, 12), (2, 3)),     # a rectangular window
    ((1, 1, 4, 4), (1, 1)),
]


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("shape,kernel", POOL_CASES)
def test_max_pool_decomposition_is_atens_scan(shape, kernel, memory_format):
    if memory_format == torch.channels_last and len(shape) != 4:
        pytest.skip("channels-last is a layout of 4-d tensors")
    x = pool_input(shape).contiguous(memory_format=memory_format)
    expected = aten.max_pool2d_with_indices(x, list(kernel), list(kernel))
    values, indices = decompositions.max_pool2d_with_indices(x, list(kernel), list(kernel))
    torch.testing.assert_close(values, expected[0], equal_nan=True, rtol=0, atol=0)
    assert torch.equal(indices, expected[1])
    # Channels-last in, channels-last out, as ATen's kernel.
    assert values.stride() == expected[0].stride() and indices.stride() == expected[1].stride()


@pytest.mark.parametrize("arguments", [
    dict(kernel_size=[3, 3], stride=[2, 2]),              # overlapping windows
    dict(kernel_size=[2, 2], stride=[2, 2], padding=[1, 1]),
    dict(kernel_size=[2, 2], stride=[2, 2], dilation=[2, 2]),
    dict(kernel_size=[2, 2], stride=[2, 2], ceil_mode=True),
])
def test_other_pools_are_left_to_the_kernel(arguments):
    assert decompositions.max_pool2d_with_indices(torch.randn(1, 1, 8, 8), **arguments) is NotImplemented


def test_integer_and_other_layouts_are_left_to_the_kernel():
    assert decompositions.max_pool2d_with_indices(torch.ones(1, 1, 4, 4, dtype=torch.int64), [2, 2]) \
        is NotImplemented
    transposed = torch.randn(1, 3, 4, 4).transpose(2, 3)
    assert decompositions.max_pool2d_with_indices(transposed, [2, 2]) is NotImplemented


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_compiled_max_pool_matches_the_cpu_with_indices_and_gradient(dtype, memory_format):
    def pool(x):
        return functional.max_pool2d(x, 2, return_indices=True)

    x = pool_input((2, 4, 10, 6), dtype).contiguous(memory_format=memory_format)
    x_kiln = x.to("kiln").requires_grad_()
    values, indices = torch.compile(pool, backend="kiln")(x_kiln)
    expected_values, expected_indices = pool(x.clone().requires_grad_())
    torch.testing.assert_close(values.cpu(), expected_values.detach(), equal_nan=True, rtol=0, atol=0)
    assert torch.equal(indices.cpu(), expected_indices)
    assert values.stride() == expected_values.stride() and indices.stride() == expected_indices.stride()

    # The backward scatters through the decomposition's indices.
    finite = torch.randn(2, 4, 10, 6, generator=torch.Generator().manual_seed(1)).to(dtype)
    finite = finite.contiguous(memory_format=memory_format)
    compiled = torch.compile(lambda t: functional.max_pool2d(t, 2).square().sum(), backend="kiln")
    cpu_input, kiln_input = finite.clone().requires_grad_(), finite.to("kiln").requires_grad_()
    (functional.max_pool2d(cpu_input, 2).square().sum()).backward()
    compiled(kiln_input).backward()
    torch.testing.assert_close(kiln_input.grad.cpu(), cpu_input.grad)


def test_compiled_pool_indices_are_the_window_corners_plus_one_constant_per_tap():
    # The corners (oh * kh * W + ow * kw) are one small tensor: two scaled
    # aranges and their sum. Each tap adds its constant inside the scan's
    # kernel, instead of three small kernels of its own per tap.
    def pool(x):
        return functional.max_pool2d(x, 2, return_indices=True)

    x = pool_input((2, 4, 10, 6))
    with torch.no_grad():
        values, indices = torch.compile(pool, backend="kiln")(x.to("kiln"))
    expected_values, expected_indices = pool(x)
    torch.testing.assert_close(values.cpu(), expected_values, equal_nan=True, rtol=0, atol=0)
    assert torch.equal(indices.cpu(), expected_indices)
    stats = torch_kiln.compile_stats()
    assert stats["kernels"] <= 4, stats


@pytest.mark.parametrize("grad_enabled", [False, True])
def test_compiled_pool_after_relu_runs_without_the_pool_kernel(grad_enabled):
    def block(x):
        return functional.max_pool2d(torch.relu(x), 2)

    x = torch.randn(2, 3, 8, 8)
    with torch.set_grad_enabled(grad_enabled):
        result = torch.compile(block, backend="kiln")(x.to("kiln"))
    torch.testing.assert_close(result.cpu(), block(x), rtol=0, atol=0)
    stats = torch_kiln.compile_stats()
    # Under no_grad the ReLU moves after the pool (inference_folding.py) and
    # joins the four-tap scan: one kernel. Otherwise the ReLU and the scan are
    # two (the taps are views of the ReLU's result). The views are the only
    # calls: two slices per tap.
    assert stats["kernels"] == (2 if grad_enabled else 1), stats
    assert stats["extern_calls"] == 8, stats


@pytest.mark.parametrize("dims,correction,keepdim", [
    ([0, 2, 3], 0, True), ([1], 1, False), (None, 1, False), ([-1], 0, False), ([0, 1], 2, True)])
def test_var_mean_decomposition_matches_aten(dims, correction, keepdim):
    x = torch.randn(4, 5, 6, 3, generator=torch.Generator().manual_seed(2)) * 3 + 10
    expected = torch.var_mean(x, dims, correction=correction, keepdim=keepdim)
    variance, mean = decompositions.var_mean(x, dims, correction=correction, keepdim=keepdim)
    torch.testing.assert_close(variance, expected[0])
    torch.testing.assert_close(mean, expected[1])


def test_var_mean_of_a_single_element_is_nan_with_correction():
    variance, mean = decompositions.var_mean(torch.tensor([2.0]), [0], correction=1)
    assert math.isnan(variance.item()) and mean.item() == 2.0


@pytest.mark.parametrize("training", [False, True])
def test_compiled_batch_norm_matches_eager_and_updates_running_stats(training):
    torch.manual_seed(0)
    cpu_norm = torch.nn.BatchNorm2d(5).train(training)
    with torch.no_grad():
        cpu_norm.running_mean.uniform_(-1, 1)
        cpu_norm.running_var.uniform_(0.5, 2)
        cpu_norm.weight.uniform_(0.5, 1.5)
        cpu_norm.bias.uniform_(-0.5, 0.5)
    kiln_norm = torch.nn.BatchNorm2d(5).train(training).to("kiln")
    kiln_norm.load_state_dict(cpu_norm.state_dict())
    compiled = torch.compile(lambda x: torch.relu(kiln_norm(x)), backend="kiln")
    x = torch.randn(4, 5, 6, 6) * 2 + 1
    for _ in range(2):
        torch.testing.assert_close(compiled(x.to("kiln")).cpu(), torch.relu(cpu_norm(x)))
    for name, tensor in cpu_norm.state_dict().items():
        torch.testing.assert_close(kiln_norm.state_dict()[name].cpu(), tensor, msg=name)


@pytest.mark.parametrize("op", ["native_batch_norm", "_native_batch_norm_legit",
                                "_native_batch_norm_legit_no_training"])
def test_compiled_batch_norm_in_evaluation_saves_empty_statistics_as_aten(op):
    generator = torch.Generator().manual_seed(0)
    x, weight, bias = (torch.randn(shape, generator=generator) for shape in ((3, 2, 4), (2,), (2,)))
    mean, variance = torch.zeros(2), torch.rand(2, generator=generator) + 0.5
    arguments = (x, weight, bias, mean, variance) + ((False,) if op != "_native_batch_norm_legit_no_training" else ())
    function = getattr(torch.ops.aten, op)
    expected = function(*arguments, 0.1, 1e-5)
    compiled = torch.compile(lambda *a: function(*a, 0.1, 1e-5), backend="kiln", dynamic=False)
    actual = compiled(*(a.to("kiln") if torch.is_tensor(a) else a for a in arguments))
    assert [tuple(t.shape) for t in actual] == [tuple(x.shape), (0,), (0,)]
    torch.testing.assert_close([t.cpu() for t in actual], list(expected))


def test_compiled_frozen_batch_norm_backward_matches_the_cpu():
    # A model in eval mode that still trains (frozen statistics): the
    # backward reads the running statistics, not the empty saved ones.
    torch.manual_seed(0)
    cpu_model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()).eval()
    with torch.no_grad():
        cpu_model[1].running_var.uniform_(0.5, 2)
    kiln_model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()).eval()
    kiln_model.load_state_dict(cpu_model.state_dict())
    kiln_model.to("kiln")
    x = torch.randn(2, 3, 8, 8)
    cpu_model(x).square().sum().backward()
    torch.compile(kiln_model, backend="kiln")(x.to("kiln")).square().sum().backward()
    for (name, expected), actual in zip(cpu_model.named_parameters(), kiln_model.parameters()):
        torch.testing.assert_close(actual.grad.cpu(), expected.grad, msg=name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("operation", ["softmax", "log_softmax", "layer_norm"])
@pytest.mark.parametrize("dim", [-1, 1])
def test_compiled_normalizations_match_the_cpu_with_gradients(operation, dim, dtype):
    if operation == "layer_norm" and dim != -1:
        pytest.skip("layer norm normalizes trailing dims")
    generator = torch.Generator().manual_seed(3)
    x = (torch.randn(4, 6, 10, generator=generator) * 4).to(dtype)
    weight = torch.randn(10, generator=generator).to(dtype)
    bias = torch.randn(10, generator=generator).to(dtype)

    def apply(t, w, b):
        if operation == "layer_norm":
            return functional.layer_norm(t, (10,), w, b)
        return getattr(torch, operation)(t, dim)

    def run(device, function):
        inputs = [tensor.detach().to(device).requires_grad_() for tensor in (x, weight, bias)]
        result = function(*inputs)
        (result * torch.linspace(-1, 1, result.shape[-1], dtype=dtype, device=device)).sum().backward()
        return [result.detach().cpu()] + [tensor.grad.cpu() if tensor.grad is not None else None
                                          for tensor in inputs]

    expected = run("cpu", apply)
    actual = run("kiln", torch.compile(apply, backend="kiln"))
    for name, got, want in zip(["result", "x.grad", "weight.grad", "bias.grad"], actual, expected):
        if want is None:
            assert got is None, name
        else:
            torch.testing.assert_close(got, want, msg=name)


def softmax_input(shape, dtype, dim, seed=4):
    """Scores with a row of only -inf (a fully masked query), a row masked
    but for one key, a row with a NaN, and -inf mixed in elsewhere."""
    generator = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=generator) * 3).to(dtype).movedim(dim, -1).contiguous()
    rows = x.view(-1, x.shape[-1])
    rows[0] = float("-inf")
    rows[1, 1:] = float("-inf")
    rows[2, 0] = float("nan")
    rows[3, ::2] = float("-inf")
    return x.movedim(-1, dim)


SAFE_SOFTMAX_CASES = [
    ((4, 6, 10), -1, None), ((4, 6, 10), 1, None), ((5, 7), 0, None),
    ((2, 3, 4, 9), -1, torch.float64),   # the dtype argument converts first
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape,dim,result_dtype", SAFE_SOFTMAX_CASES)
def test_safe_softmax_decomposition_is_pytorchs_bit_for_bit(shape, dim, result_dtype, dtype):
    # Traced with the backend's table, as AOTAutograd traces it, the graph
    # gives the values of the one PyTorch's decomposition gives (on the CPU's
    # kernels), and ATen's own softmax kernel's within rounding.
    x = softmax_input(shape, dtype, dim)

    def traced(table):
        return make_fx(lambda t: aten._safe_softmax(t, dim, dtype=result_dtype), decomposition_table=table)(x)

    table = decompositions.decompositions()
    replaced_table = dict(table)
    replaced_table[aten._safe_softmax.default] = decompositions._pytorch_safe_softmax
    result, replaced = traced(table)(x), traced(replaced_table)(x)
    assert result.dtype == replaced.dtype
    torch.testing.assert_close(result, replaced, equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(result, aten._safe_softmax(x, dim, dtype=result_dtype), equal_nan=True)
    masked_row = result.movedim(dim, -1).reshape(-1, shape[dim])[0]
    assert torch.equal(masked_row, torch.zeros_like(masked_row)), "a fully masked row must give zeros"


@pytest.mark.parametrize("shape", [(0, 5), (3, 0), ()])
def test_safe_softmax_of_empty_and_scalar_inputs_is_pytorchs(shape):
    x = torch.randn(shape)
    torch.testing.assert_close(decompositions.safe_softmax(x, -1), aten._safe_softmax(x, -1), rtol=0, atol=0)


def test_compiled_attention_with_a_fully_masked_row_needs_no_second_pass():
    # Boolean masks make scaled_dot_product_attention's math path call
    # _safe_softmax; query 0 may attend to no key.
    generator = torch.Generator().manual_seed(5)
    query, key, value = (torch.randn(2, 3, 6, 8, generator=generator) for _ in range(3))
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    mask[0] = False

    def attention(q, k, v, m):
        return functional.scaled_dot_product_attention(q, k, v, attn_mask=m)

    expected = attention(query, key, value, mask)
    with torch.no_grad():
        result = torch.compile(attention, backend="kiln")(*(t.to("kiln") for t in (query, key, value, mask)))
    torch.testing.assert_close(result.cpu(), expected)
    assert torch.equal(result[:, :, 0].cpu(), torch.zeros(2, 3, 8)), "the masked query must give zeros"


def test_compiled_safe_softmax_makes_one_pass_fewer():
    x = softmax_input((3, 5, 12), torch.float32, -1)
    with torch.no_grad():
        result = torch.compile(lambda t: aten._safe_softmax(t, -1), backend="kiln")(x.to("kiln"))
    torch.testing.assert_close(result.cpu(), aten._safe_softmax(x, -1), equal_nan=True)
    # The maximum, the exponentials, their sum, the division and the masked
    # rows' zeros, found from the maximum: one row kernel, with no second
    # reduction over the input.
    stats = torch_kiln.compile_stats()
    assert stats["kernels"] == 1, stats


def test_a_compiled_adam_step_without_foreach_takes_apart_dynamos_fma(fresh_compile_state):
    # Dynamo turns addcmul_(..., value=) and addcdiv_ into Inductor's
    # prims.fma with a Python float; Kiln decomposes it into mul and add.
    torch.manual_seed(0)
    cpu = [torch.nn.Parameter(torch.randn(16, 8)) for _ in range(2)]
    kiln = [torch.nn.Parameter(p.detach().to("kiln")) for p in cpu]
    for p, q in zip(cpu, kiln):
        p.grad = torch.randn_like(p)
        q.grad = p.grad.to("kiln")
    cpu_optimizer = torch.optim.Adam(cpu, lr=1e-2, foreach=False)
    kiln_optimizer = torch.optim.Adam(kiln, lr=1e-2, foreach=False)
    step = torch.compile(kiln_optimizer.step, backend="kiln")
    for _ in range(3):
        cpu_optimizer.step()
        step()
    for p, q in zip(cpu, kiln):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), atol=1e-6, rtol=1e-5)
