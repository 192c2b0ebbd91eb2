"""Row kernels of the graph compiler (compiler/passes/fusion.h): a softmax, a
layer norm or an RMS norm over the last dims, with the pointwise nodes around
it, becomes one kernel that folds each row in turn and stores per row and per
element. Each case is compared with PyTorch on the CPU over dtypes and
layouts, and its program is checked to hold the row kernel."""
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn import functional

import torch_kiln
from torch_kiln import _C
from torch_kiln.compile.lowering.graph_lowering import lower_graph
from torch_kiln.compile.passes.decompositions import decompositions

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


def make_program(function, *examples):
    """The inference program of `function` as the kiln backend builds it:
    traced with the backend's decompositions, lowered, fused."""
    gm = make_fx(function, tracing_mode="fake", decomposition_table=decompositions())(
        *(example.to("kiln") for example in examples))
    return _C._Program(dict(lower_graph(gm).description, run_inline=True))


def row_kernels(program):
    return program.fusion_text().count("row kernel")


def softmax(x):
    return torch.softmax(x, -1)


def log_softmax(x):
    return torch.log_softmax(x, -1)


def masked_softmax(x, mask):
    return torch.softmax(x + mask, -1)


def attention_softmax(x, mask):
    """Attention's softmax (_safe_softmax): a fully masked row gives zeros."""
    return torch.ops.aten._safe_softmax(x + mask, -1)


def layer_norm(x, weight, bias):
    return functional.layer_norm(x, x.shape[-1:], weight, bias)


def layer_norm_two_dims(x, weight, bias):
    return functional.layer_norm(x, x.shape[-2:], weight, bias)


def residual_layer_norm(x, residual, weight, bias):
    """The residual sum is both normalised and returned: the row kernel
    stores it as it folds it."""
    total = x + residual
    return functional.layer_norm(total, x.shape[-1:], weight, bias), total


def rms_norm(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight


def causal_mask(size, dtype):
    return torch.full((size, size), float("-inf"), dtype=dtype).triu(1)


def scores(shape, dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=generator) * 3).to(dtype)


def tolerance(dtype):
    return {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-7, atol=1e-7),
            torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}[dtype]


def check(function, inputs, row_count, dtype):
    """Runs `function`'s program on kiln (twice: the second run replays the
    bound launches) and compares with the CPU; the program holds `row_count`
    row kernels."""
    program = make_program(function, *inputs)
    assert row_kernels(program) == row_count, program.fusion_text()
    expected = function(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for _ in range(2):
        results = program.run([tensor.to("kiln") for tensor in inputs])
        for result, reference in zip(results, expected):
            assert result.dtype == reference.dtype
            torch.testing.assert_close(result.cpu(), reference, equal_nan=True, **tolerance(dtype))
    return program


DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("function", [softmax, log_softmax])
@pytest.mark.parametrize("shape", [(64, 48), (4, 40, 37), (3, 5, 12), (40, 1000)])
def test_softmax_is_one_row_kernel(function, shape, dtype):
    program = check(function, [scores(shape, dtype)], 1, dtype)
    assert program.statistics()["kernels"] == 1, program.fusion_text()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_masked_softmax_reads_the_mask_broadcast(dtype):
    check(masked_softmax, [scores((2, 4, 40, 40), dtype), causal_mask(40, dtype)], 1, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_attention_softmax_zeroes_fully_masked_rows(dtype):
    x = scores((2, 40, 16), dtype)
    mask = torch.zeros(40, 16, dtype=dtype)
    mask[3] = float("-inf")  # query 3 sees no key
    mask[5, 1:] = float("-inf")
    x[1, 7, 2] = float("nan")  # a NaN keeps its row NaN
    program = check(attention_softmax, [x, mask], 1, dtype)
    result = program.run([x.to("kiln"), mask.to("kiln")])[0].cpu()
    assert (result[:, 3] == 0).all()
    assert result[1, 7].isnan().all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_is_one_row_kernel(dtype):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(8, 16, 32, generator=generator).to(dtype)
    weight, bias = torch.randn(32, generator=generator).to(dtype), torch.randn(32, generator=generator).to(dtype)
    check(layer_norm, [x, weight, bias], 1, dtype)


def test_layer_norm_over_two_dims_and_a_long_row():
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(6, 5, 7, generator=generator)
    weight, bias = torch.randn(5, 7, generator=generator), torch.randn(5, 7, generator=generator)
    check(layer_norm_two_dims, [x, weight, bias], 1, torch.float32)
    # 12000 elements a row: too many to keep in row buffers, so later passes
    # compute their values again from the inputs.
    x = torch.randn(40, 12000, generator=generator)
    weight, bias = torch.randn(12000, generator=generator), torch.randn(12000, generator=generator)
    check(layer_norm, [x, weight, bias], 1, torch.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_residual_sum_is_stored_by_the_layer_norms_kernel(dtype):
    generator = torch.Generator().manual_seed(3)
    x, residual = (torch.randn(4, 16, 32, generator=generator).to(dtype) for _ in range(2))
    weight, bias = torch.randn(32, generator=generator).to(dtype), torch.randn(32, generator=generator).to(dtype)
    program = check(residual_layer_norm, [x, residual, weight, bias], 1, dtype)
    assert program.statistics()["kernels"] == 1, program.fusion_text()


def test_rms_norm_is_one_row_kernel():
    generator = torch.Generator().manual_seed(4)
    check(rms_norm, [torch.randn(64, 24, generator=generator), torch.randn(24, generator=generator)], 1,
          torch.float32)


def test_non_contiguous_and_broadcast_inputs():
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(48, 64, generator=generator)
    program = make_program(softmax, x)
    # The same program run on a transposed view: the launcher takes its strides.
    transposed = torch.randn(64, 48, generator=generator).t()
    result, = program.run([transposed.to("kiln")])
    torch.testing.assert_close(result.cpu(), softmax(transposed))
    # A row broadcast over the batch, and a batch broadcast over the rows.
    bias = torch.randn(64, generator=generator)
    check(masked_softmax, [x, bias], 1, torch.float32)
    column = torch.randn(48, 1, generator=generator)
    check(masked_softmax, [x, column], 1, torch.float32)


def test_zero_rows_and_single_element_rows():
    empty = torch.randn(0, 16)
    result, = make_program(softmax, empty).run([empty.to("kiln")])
    assert result.shape == (0, 16)
    # Rows of one element stay plain reductions (nothing to fold across).
    single = torch.randn(64, 1)
    program = make_program(layer_norm, single, torch.ones(1), torch.zeros(1))
    assert row_kernels(program) == 0, program.fusion_text()
    result, = program.run([single.to("kiln"), torch.ones(1, device="kiln"), torch.zeros(1, device="kiln")])
    torch.testing.assert_close(result.cpu(), layer_norm(single, torch.ones(1), torch.zeros(1)))


def test_few_long_rows_stay_plain_reductions():
    """4 rows of 40000: a row kernel would run on 4 threads at most, where the
    plain reductions split each row."""
    x = torch.randn(4, 40000, generator=torch.Generator().manual_seed(6))
    check(softmax, [x], 0, torch.float32)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(32)
        self.linear = torch.nn.Linear(32, 32)

    def forward(self, x):
        scores = torch.softmax(self.linear(self.norm(x)), -1)
        return (scores * x).sum()


def test_training_through_row_kernels_matches_the_cpu():
    """Forward and backward graphs: layer norm and softmax, and their
    backward reductions over the rows."""
    generator = torch.Generator().manual_seed(7)
    model = Block()
    x = torch.randn(64, 32, generator=generator, requires_grad=True)
    expected = model(x)
    expected.backward()
    kiln_model = Block().to("kiln")
    kiln_model.load_state_dict(model.state_dict())
    kiln_x = x.detach().to("kiln").requires_grad_()
    loss = torch.compile(kiln_model, backend="kiln")(kiln_x)
    loss.backward()
    torch.testing.assert_close(loss.cpu(), expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(kiln_x.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)
    for (name, parameter), kiln_parameter in zip(model.named_parameters(), kiln_model.parameters()):
        torch.testing.assert_close(kiln_parameter.grad.cpu(), parameter.grad, rtol=1e-5, atol=1e-5, msg=name)
