"""The matmul family handed straight to BLAS (library/direct_gemm.h), eager
and in compiled programs: every mm and addmm result must equal PyTorch's CPU
result bit for bit, since both make the same BLAS call (bmm and baddbmm to
rounding: ATen's bmm takes other routes). Layouts BLAS cannot read directly, outputs
that share memory with an input, and other dtypes take ATen's kernel and must
match too."""
import pytest
import torch

import torch_kiln

FLOATS = [torch.float32, torch.float64]


def sample(shape, dtype, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def layouts(matrix):
    """The matrix contiguous, column-major, sliced out of a wider one (a
    leading dimension larger than its width), and with every other row."""
    rows, cols = matrix.shape
    wide = torch.zeros(rows, cols + 3, dtype=matrix.dtype)
    wide[:, :cols] = matrix
    tall = torch.zeros(2 * rows, cols, dtype=matrix.dtype)
    tall[::2] = matrix
    return {"contiguous": matrix, "column-major": matrix.t().contiguous().t(),
            "sliced": wide[:, :cols], "every other row": tall[::2]}


def on_kiln(tensor):
    """A kiln copy of `tensor` with its strides (.to() would make it dense)."""
    result = torch.empty_strided(tensor.size(), tensor.stride(), dtype=tensor.dtype, device="kiln")
    result.copy_(tensor)
    return result


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sizes", [(5, 3, 4), (1, 3, 4), (5, 1, 4), (5, 3, 1), (64, 32, 64)])
@pytest.mark.parametrize("a_layout", ["contiguous", "column-major", "sliced", "every other row"])
@pytest.mark.parametrize("b_layout", ["contiguous", "column-major", "sliced"])
def test_mm_equals_the_cpu_bit_for_bit(dtype, sizes, a_layout, b_layout):
    m, k, n = sizes
    a = layouts(sample((m, k), dtype))[a_layout]
    b = layouts(sample((k, n), dtype, 1))[b_layout]
    assert torch.equal(torch.mm(on_kiln(a), on_kiln(b)).cpu(), torch.mm(a, b))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bias_shape", [(), (1,), (6,), (1, 6), (4, 1), (4, 6), "transposed"])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, -2), (0, 1), (1, 0)])
def test_addmm_equals_the_cpu_bit_for_bit(dtype, bias_shape, beta, alpha):
    a, b = sample((4, 3), dtype), sample((3, 6), dtype, 1)
    bias = sample((6, 4), dtype, 2).t() if bias_shape == "transposed" else sample(bias_shape, dtype, 2)
    expected = torch.addmm(bias, a, b, beta=beta, alpha=alpha)
    result = torch.addmm(on_kiln(bias), on_kiln(a), on_kiln(b), beta=beta, alpha=alpha)
    assert torch.equal(result.cpu(), expected)


def test_beta_zero_ignores_nan_in_the_bias_and_alpha_zero_nan_in_the_matrices():
    a, b = sample((4, 3), torch.float32), sample((3, 6), torch.float32, 1)
    bias = torch.full((6,), float("nan"))
    assert torch.equal(torch.addmm(on_kiln(bias), on_kiln(a), on_kiln(b), beta=0).cpu(), a @ b)
    nan_matrix = torch.full((4, 3), float("nan"))
    ones = torch.ones(6)
    assert torch.equal(torch.addmm(on_kiln(ones), on_kiln(nan_matrix), on_kiln(b), alpha=0).cpu(),
                       torch.addmm(ones, nan_matrix, b, alpha=0))


@pytest.mark.parametrize("dtype", FLOATS)
def test_in_place_addmm_reads_its_own_values(dtype):
    a, b = sample((4, 3), dtype), sample((3, 4), dtype, 1)
    accumulator = sample((4, 4), dtype, 2)
    device_accumulator = on_kiln(accumulator)
    device_accumulator.addmm_(on_kiln(a), on_kiln(b), beta=0.5, alpha=2)
    assert torch.equal(device_accumulator.cpu(), accumulator.addmm(a, b, beta=0.5, alpha=2))
    transposed = sample((4, 4), dtype, 3).t()  # the output is column-major: ATen's kernel
    device_transposed = on_kiln(transposed)
    device_transposed.addmm_(on_kiln(a), on_kiln(b))
    assert torch.equal(device_transposed.cpu(), transposed.clone().addmm_(a, b))


def test_an_output_on_the_storage_of_an_input():
    a, b = sample((4, 4), torch.float32), sample((4, 4), torch.float32, 1)
    storage = on_kiln(torch.zeros(4, 8))
    left, right = storage[:, :4], storage[:, 4:]
    left.copy_(on_kiln(a))
    torch.mm(left, on_kiln(b), out=right)  # BLAS is not handed memory it reads
    assert torch.equal(right.cpu(), a @ b)
    assert torch.equal(left.cpu(), a)


def test_a_queued_product_reads_an_operand_released_after_the_launch():
    # FSDP frees an unsharded parameter with storage().resize_(0) right after
    # the forward that reads it; the memory stays the stream's until the
    # queued work ran, so the product must use the pointer it had at launch.
    a, b = sample((256, 256), torch.float32), sample((256, 256), torch.float32, 1)
    busy = torch.ones(2048, 2048, device="kiln")
    for _ in range(4):
        busy = busy * 1.5  # queued work ahead of the product
    device_a, device_b = on_kiln(a), on_kiln(b)
    result = torch.mm(device_a, device_b)
    device_b.untyped_storage().resize_(0)
    assert torch.equal(result.cpu(), a @ b)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.int64, torch.bfloat16])
def test_other_dtypes_take_atens_kernel(dtype):
    a = sample((4, 3), torch.float32).to(dtype) if dtype != torch.int64 else torch.arange(12).view(4, 3)
    b = sample((3, 5), torch.float32, 1).to(dtype) if dtype != torch.int64 else torch.arange(15).view(3, 5)
    torch.testing.assert_close(torch.mm(on_kiln(a), on_kiln(b)).cpu(), torch.mm(a, b))


def test_conjugate_and_negative_views_take_atens_kernel():
    a, b = sample((4, 3), torch.complex64), sample((3, 5), torch.complex64, 1)
    assert torch.equal(torch.mm(on_kiln(a).conj(), on_kiln(b)).cpu(), torch.mm(a.conj(), b))


@pytest.mark.parametrize("sizes", [(0, 3, 4), (5, 0, 4), (5, 3, 0)])
def test_empty_dims(sizes):
    m, k, n = sizes
    a, b, bias = sample((m, k), torch.float32), sample((k, n), torch.float32, 1), sample((n,), torch.float32, 2)
    assert torch.equal(torch.addmm(on_kiln(bias), on_kiln(a), on_kiln(b), beta=0.5).cpu(),
                       torch.addmm(bias, a, b, beta=0.5))


# A batch of matrices contiguous, transposed within each matrix, with the
# batch dim innermost in memory (a permuted tensor), and one matrix expanded
# along the batch (batch stride 0); made by the same view ops on either device.
BATCHED_LAYOUTS = {
    "contiguous": lambda batch: batch,
    "transposed": lambda batch: batch.transpose(1, 2).contiguous().transpose(1, 2),
    "batch innermost": lambda batch: batch.permute(1, 2, 0).contiguous().permute(2, 0, 1),
    "expanded": lambda batch: batch[:1].expand(batch.shape),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sizes", [(3, 5, 4, 6), (4, 16, 8, 16), (1, 1, 3, 2)])
@pytest.mark.parametrize("first_layout", ["contiguous", "transposed", "batch innermost", "expanded"])
@pytest.mark.parametrize("second_layout", ["contiguous", "transposed", "expanded"])
def test_bmm_matches_the_cpu(dtype, sizes, first_layout, second_layout):
    batches, m, k, n = sizes
    first, second = sample((batches, m, k), dtype), sample((batches, k, n), dtype, 1)
    make_first, make_second = BATCHED_LAYOUTS[first_layout], BATCHED_LAYOUTS[second_layout]
    result = torch.bmm(make_first(first.to("kiln")), make_second(second.to("kiln")))
    torch.testing.assert_close(result.cpu(), torch.bmm(make_first(first), make_second(second)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bias_shape", [(), (6,), (4, 6), (3, 1, 6), (3, 4, 6), "transposed"])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, -2), (0, 1)])
def test_baddbmm_matches_the_cpu(dtype, bias_shape, beta, alpha):
    first, second = sample((3, 4, 5), dtype), sample((3, 5, 6), dtype, 1)
    bias = (sample((3, 6, 4), dtype, 2).transpose(1, 2) if bias_shape == "transposed"
            else sample(bias_shape, dtype, 2))
    expected = torch.baddbmm(bias, first, second, beta=beta, alpha=alpha)
    result = torch.baddbmm(on_kiln(bias), on_kiln(first), on_kiln(second), beta=beta, alpha=alpha)
    torch.testing.assert_close(result.cpu(), expected)


def test_in_place_baddbmm_and_a_batched_output_out_of_order():
    first, second = sample((3, 4, 5), torch.float32), sample((3, 5, 6), torch.float32, 1)
    accumulator = sample((3, 4, 6), torch.float32, 2)
    device_accumulator = on_kiln(accumulator)
    device_accumulator.baddbmm_(on_kiln(first), on_kiln(second), beta=0.5)
    torch.testing.assert_close(device_accumulator.cpu(), accumulator.baddbmm(first, second, beta=0.5))
    out = torch.zeros(4, 3, 6, device="kiln").transpose(0, 1)  # matrices interleaved row by row
    torch.bmm(on_kiln(first), on_kiln(second), out=out)
    torch.testing.assert_close(out.cpu(), torch.bmm(first, second))


class Projections(torch.nn.Module):
    """Products a compiled graph keeps on the library path: linear layers
    (addmm and mm of a transposed weight) and a product of an activation with
    itself whose six columns fill no vector (small_products.py)."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(8, 16)
        self.second = torch.nn.Linear(16, 6, bias=False)

    def forward(self, inputs):
        projected = self.second(torch.relu(self.first(inputs)))
        return projected.t() @ projected


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("grad", [False, True])
def test_compiled_programs_call_the_products_without_the_dispatcher_and_match_the_cpu(dtype, grad):
    torch.manual_seed(0)
    model = Projections().to(dtype)
    inputs = sample((12, 8), dtype)
    device_model = Projections().to(dtype).to("kiln")
    device_model.load_state_dict(model.state_dict())
    compiled = torch.compile(device_model, backend="kiln", dynamic=False)
    with torch.set_grad_enabled(grad):
        expected = model(inputs)
        for _ in range(3):  # the first call runs through AOTAutograd, later ones the C++ runtime
            result = compiled(on_kiln(inputs))
            assert torch.equal(result.detach().cpu(), expected.detach())
    # The products are called without the dispatcher: a profile of a compiled
    # call (and backward) holds the programs but no ATen matmul op.
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        with torch.set_grad_enabled(grad):
            profiled = compiled(on_kiln(inputs))
        if grad:
            profiled.sum().backward()
        torch.kiln.synchronize()
    names = {event.name for event in profile.events()}
    assert "kiln::compiled_program" in names
    assert not names & {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}
    if grad:
        device_model.zero_grad(set_to_none=True)
        expected.sum().backward()
        result.sum().backward()
        device_parameters = dict(device_model.named_parameters())
        for name, parameter in model.named_parameters():
            torch.testing.assert_close(device_parameters[name].grad.cpu(), parameter.grad)
