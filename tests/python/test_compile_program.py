"""torch_kiln._C._Program run directly on a lowered graph: a fused kernel's
launch is bound on the first run and replayed with new data pointers on later
runs (aten/program/bound_launch.h); a run whose inputs have other strides
takes the full launcher. Every run must give the CPU's result."""
import re

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import torch_kiln
from torch_kiln import _C
from torch_kiln.compile.lowering.graph_lowering import lower_graph


def pointwise_and_reduction(x, row):
    scaled = (x * 2 + row).sin() * row  # row broadcasts along dim 0
    return scaled, scaled.sum(dim=1), (x.t() * 3).contiguous()


def make_program(function, *examples, run_inline=True):
    gm = make_fx(function, tracing_mode="fake")(*(example.to("kiln") for example in examples))
    return _C._Program(dict(lower_graph(gm).description, run_inline=run_inline))


def transposed_on_kiln(tensor):
    """`tensor`'s values on kiln with transposed strides."""
    return tensor.t().contiguous().to("kiln").t()


def check(program, x_kiln, row):
    x = x_kiln.cpu()
    for result, expected in zip(program.run([x_kiln, row.to("kiln")]), pointwise_and_reduction(x, row)):
        torch.testing.assert_close(result.cpu(), expected)


@pytest.mark.parametrize("run_inline", [True, False])  # inference programs, training programs
def test_replayed_launches_read_each_runs_data(run_inline):
    generator = torch.Generator().manual_seed(0)
    x, row = torch.randn(6, 8, generator=generator), torch.randn(8, generator=generator)
    program = make_program(pointwise_and_reduction, x, row, run_inline=run_inline)
    assert program.statistics()["kernels"] >= 2
    for step in range(4):  # the first run binds, the others replay with new pointers and values
        check(program, (x + step).to("kiln"), row * (step + 1))
    # Queued behind other work: the steps are launched, not run inline, and still correct.
    big = torch.ones(1 << 20, device="kiln")
    for _ in range(3):
        big = big * 1.0001
    check(program, x.to("kiln"), row)
    assert abs(big[0].item() - 1.0001 ** 3) < 1e-5


@pytest.mark.parametrize("first_layout", ["contiguous", "transposed"])
def test_a_run_with_other_strides_takes_the_full_launcher_and_the_binding_stays(first_layout):
    generator = torch.Generator().manual_seed(1)
    x, row = torch.randn(6, 8, generator=generator), torch.randn(8, generator=generator)
    program = make_program(pointwise_and_reduction, x, row)
    layouts = {"contiguous": lambda t: t.to("kiln"), "transposed": transposed_on_kiln}
    other = "transposed" if first_layout == "contiguous" else "contiguous"
    for step, layout in enumerate([first_layout, other, first_layout, other]):
        x_kiln = layouts[layout](x - step)
        assert x_kiln.is_contiguous() == (layout == "contiguous")
        check(program, x_kiln, row)


def test_a_factory_the_program_reads_itself_runs_once(fresh_compile_state):
    def scale_by_position(x):
        return x * torch.arange(x.shape[0], device=x.device, dtype=x.dtype)

    compiled = torch.compile(scale_by_position, backend="kiln")
    for step in range(3):
        x = torch.randn(5, generator=torch.Generator().manual_seed(step))
        if step == 1:
            torch_kiln.clear_op_tracking()
        torch.testing.assert_close(compiled(x.to("kiln")).cpu(), scale_by_position(x))
    assert "aten::arange" not in str(torch_kiln.get_executed_ops())  # kept from the first run


def test_a_factory_result_returned_to_the_caller_is_made_afresh(fresh_compile_state):
    compiled = torch.compile(lambda x: (torch.arange(4, device=x.device), x + 1), backend="kiln")
    x = torch.zeros(4, device="kiln")
    positions, _ = compiled(x)
    positions.add_(100)  # the caller owns it: the next run must not see this
    positions, _ = compiled(x)
    assert positions.cpu().tolist() == [0, 1, 2, 3]


def test_a_reduction_of_values_the_kernel_makes_itself(fresh_compile_state):
    # masked.var without a mask: the count is a sum over a `full`, a fused
    # reduction with no input to take its shape from (it crashed the process).
    def variance_by_count(x):
        count = torch.full(x.shape, 1, dtype=torch.int64, device=x.device).sum(dim=(0, 1, 2), keepdim=True)
        ones = torch.ones(x.shape[0], 7, device=x.device).sum(dim=1)
        return ((x - x.sum(dim=(0, 1, 2), keepdim=True) / count) ** 2).sum() / (count - 1), count, ones

    x = torch.randn(5, 4, 3, generator=torch.Generator().manual_seed(0))
    results = torch.compile(variance_by_count, backend="kiln", dynamic=False)(x.to("kiln"))
    for result, expected in zip(results, variance_by_count(x)):
        torch.testing.assert_close(result.cpu(), expected)


def pooled_and_transposed(x, channel):
    """A 2x2 max over stride-2 views and a transposed read: fused kernels whose
    rows are short and strided, specialised to the program's fixed shapes."""
    y = torch.relu(x * channel.view(1, -1, 1, 1) + 1)
    windows = [y[:, :, i::2, j::2] for i in (0, 1) for j in (0, 1)]
    pooled = torch.maximum(torch.maximum(windows[0], windows[1]), torch.maximum(windows[2], windows[3]))
    return pooled, (x.transpose(2, 3) * 2).contiguous()


@pytest.mark.parametrize("run_inline", [True, False])
def test_fixed_shape_kernels_split_mid_row_across_threads(run_inline):
    # 2 x 3 x 94 x 70: 39480 elements, enough for the launcher to split each
    # kernel across threads at positions inside rows of 35 and 94.
    generator = torch.Generator().manual_seed(2)
    x, channel = torch.randn(2, 3, 94, 70, generator=generator), torch.randn(3, generator=generator)
    x[0, 1, 4, 6] = float("nan")
    program = make_program(pooled_and_transposed, x, channel, run_inline=run_inline)
    for step in range(3):  # bound on the first run, replayed after
        inputs = (x - step, channel * (step + 1))
        results = program.run([tensor.to("kiln") for tensor in inputs])
        for result, expected in zip(results, pooled_and_transposed(*inputs)):
            torch.testing.assert_close(result.cpu(), expected, equal_nan=True)


def four_operand_maxima(a, b, c, d):
    return torch.maximum(a.relu(), b.relu()) * c + d.t()


@pytest.mark.parametrize("run_inline", [True, False])
def test_a_kernel_reading_several_full_size_operands_splits_across_threads(run_inline):
    # 160 x 125 positions, fewer than one op's threading threshold (65536
    # elements), but the fused kernel reads four full-size operands and writes
    # one: it splits across threads (fused_launch.cc), here mid-row.
    generator = torch.Generator().manual_seed(5)
    a, b, c = (torch.randn(160, 125, generator=generator) for _ in range(3))
    d = torch.randn(125, 160, generator=generator)
    a[3, 7], b[150, 124] = float("nan"), float("nan")
    program = make_program(four_operand_maxima, a, b, c, d, run_inline=run_inline)
    for step in range(3):  # bound on the first run, replayed after
        inputs = (a - step, b * (step + 1), c, d)
        (result,) = program.run([tensor.to("kiln") for tensor in inputs])
        torch.testing.assert_close(result.cpu(), four_operand_maxima(*inputs), equal_nan=True)


def scaled_query_layout(x):
    """Attention's decomposition: a scaled, permuted operand expanded to its
    own shape, then copied contiguous for the batched product."""
    scaled = x.permute(0, 2, 1, 3) * 0.5
    copied = scaled.expand(scaled.shape).clone(memory_format=torch.contiguous_format)
    return copied.view(copied.shape) + 1, scaled.expand(scaled.shape)


def test_a_view_with_its_inputs_layout_is_read_through_and_lets_the_copy_fuse():
    x = torch.randn(2, 5, 3, 4, generator=torch.Generator().manual_seed(3))
    program = make_program(scaled_query_layout, x)
    # The scale, the copy and the addition: one kernel, with the expand and
    # the view of the same layout read through. The expand returned to the
    # caller stays a view call of its own.
    assert program.statistics()["kernels"] == 1
    assert program.fusion_text().count("extern aten.expand") == 1
    results = program.run([x.to("kiln")])
    for result, expected in zip(results, scaled_query_layout(x)):
        torch.testing.assert_close(result.cpu(), expected)
        assert result.stride() == expected.stride()


def normalized_by_statistics(x, mean, variance):
    """Batch norm's inference decomposition copies its float32 statistics to
    float32 first: a copy of the same layout, read through."""
    copied = torch.ops.aten._to_copy.default(variance, dtype=torch.float32)
    return (x - mean.clone()) * torch.rsqrt(copied + 1e-5)


def copied_then_written(x, mean):
    """A copy whose input the graph then writes in place (running statistics
    of training), through a view that is read through: the copy keeps the
    value from before."""
    copied = torch.ops.aten._to_copy.default(mean.view(mean.shape), dtype=torch.float32)
    copied = copied + torch.ops.aten._to_copy.default(mean.view(2, -1), dtype=torch.float32).view(-1)
    mean.copy_(mean * 0.5 + 1)
    return x * copied.sum()


def test_a_copy_to_the_same_dtype_and_layout_is_read_through():
    generator = torch.Generator().manual_seed(4)
    x, mean, variance = (torch.randn(6, 8, generator=generator), torch.randn(8, generator=generator),
                         torch.rand(8, generator=generator))
    program = make_program(normalized_by_statistics, x, mean, variance)
    # rsqrt(variance + eps) (per feature) and the normalisation: no copies.
    assert program.statistics()["kernels"] == 2
    assert "(1 nodes)" not in program.fusion_text()
    result, = program.run([x.to("kiln"), mean.to("kiln"), variance.to("kiln")])
    torch.testing.assert_close(result.cpu(), normalized_by_statistics(x, mean, variance))

    program = make_program(copied_then_written, x, mean)
    # The copies (one through a view that is read through, one through a
    # reshaping view), the new mean, the sum, the product.
    assert program.statistics()["kernels"] == 5, program.fusion_text()
    mean_kiln = mean.to("kiln")
    result, = program.run([x.to("kiln"), mean_kiln])
    expected_mean = mean.clone()
    torch.testing.assert_close(result.cpu(), copied_then_written(x, expected_mean))
    torch.testing.assert_close(mean_kiln.cpu(), expected_mean)


def test_torch_profiler_shows_the_run_and_each_fused_kernel():
    generator = torch.Generator().manual_seed(0)
    x, row = torch.randn(6, 8, generator=generator), torch.randn(8, generator=generator)
    program = make_program(pointwise_and_reduction, x, row)
    inputs = [x.to("kiln"), row.to("kiln")]
    program.run(inputs)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        program.run(inputs)
        program.run(inputs)
    counts = {}
    for event in profile.events():
        counts[event.name] = counts.get(event.name, 0) + 1
    assert counts.get("kiln::compiled_program") == 2
    kernels = {name: count for name, count in counts.items() if name.startswith("kiln::fused_")}
    # One label per kernel, "kiln::fused_<kind>[<first 12 hex digits of its key>]", as the dump names it.
    assert len(kernels) == program.statistics()["kernels"]
    assert all(count == 2 for count in kernels.values())
    assert all(re.fullmatch(r"kiln::fused_(pointwise|reduction|row)\[[0-9a-f]{12}\]", name) for name in kernels)
