"""Where compiled inference programs run (compile/passes/placement.py): a
program of large products runs whole in the caller, one of many small steps
is queued on the stream, and both give the CPU's results; the flops the
choice rests on match torch.utils.flop_counter's."""
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import torch_kiln
from torch_kiln.compile.passes import placement


def compiled_inference(function, *inputs):
    """(kiln result, inference programs queued, programs) of a fresh compile of `function`."""
    torch._dynamo.reset()
    torch_kiln.reset_compile_stats()
    compiled = torch.compile(function, backend="kiln", dynamic=False)
    with torch.no_grad():
        result = compiled(*[tensor.to("kiln") for tensor in inputs])
        result = compiled(*[tensor.to("kiln") for tensor in inputs])  # a later run takes the same path
    stats = torch_kiln.compile_stats()
    return result.cpu(), stats["queued_inference_graphs"], stats["graphs"]


def large_products(x, w1, w2):
    return torch.relu(x @ w1) @ w2


def routing(scores, values):
    """Small steps, as mixture-of-experts routing makes: top-k, sort, counts, gathers."""
    top, chosen = scores.topk(2, dim=-1)
    order = chosen.flatten().argsort(stable=True)
    counts = torch.bincount(chosen.flatten(), minlength=scores.size(-1)).cumsum(0)
    return values[order // 2] * top.flatten()[order].unsqueeze(1) + counts[-1]


def test_a_program_of_large_products_runs_inline():
    generator = torch.Generator().manual_seed(0)
    x, w1, w2 = (torch.randn(256, 512, generator=generator), torch.randn(512, 512, generator=generator),
                 torch.randn(512, 256, generator=generator))
    result, queued, programs = compiled_inference(large_products, x, w1, w2)
    assert queued == 0 and programs == 1
    torch.testing.assert_close(result, large_products(x, w1, w2), rtol=1e-4, atol=1e-3)


def test_a_program_of_small_steps_is_queued():
    generator = torch.Generator().manual_seed(1)
    scores, values = torch.randn(16, 4, generator=generator), torch.randn(16, 8, generator=generator)
    result, queued, programs = compiled_inference(routing, scores, values)
    assert queued == programs >= 1  # bincount's size may split the graph
    torch.testing.assert_close(result, routing(scores, values))


@pytest.mark.parametrize("case", ["linear", "convolution", "batched"])
def test_flops_match_the_flop_counter(case):
    generator = torch.Generator().manual_seed(2)

    def tensors(*shapes):
        return [torch.randn(shape, generator=generator) for shape in shapes]
    function, inputs = {
        "linear": (torch.nn.functional.linear, tensors((8, 64), (32, 64), (32,))),
        "convolution": (lambda x, w: torch.nn.functional.conv2d(x, w, padding=1), tensors((2, 3, 16, 16), (8, 3, 3, 3))),
        "batched": (lambda x: torch.bmm(x, x.transpose(1, 2)), tensors((4, 8, 16))),
    }[case]
    graph = torch.fx.experimental.proxy_tensor.make_fx(function, tracing_mode="fake")(*inputs)
    with FlopCounterMode(display=False) as counter:
        function(*inputs)
    assert placement.graph_flops(graph) == counter.get_total_flops() > 0


@pytest.mark.parametrize("shapes, flops", [
    (((32, 24), (4, 24, 40)), 2 * 32 * 24 * 40),      # 2-d by 3-d: the groups' rows
    (((4, 16, 24), (24, 32)), 2 * 16 * 24 * 32),      # 3-d by 2-d: the groups' columns
    (((24, 32), (32, 40)), 2 * 24 * 32 * 40),         # 2-d by 2-d: the shared dim
    (((4, 8, 24), (4, 24, 16)), 2 * 4 * 8 * 24 * 16),  # 3-d by 3-d: one product per group
])
def test_grouped_product_flops(shapes, flops):
    a, b = (torch.empty(shape, device="meta") for shape in shapes)
    graph = torch.fx.Graph()
    nodes = [graph.placeholder(name) for name in "ab"]
    for node, value in zip(nodes, (a, b)):
        node.meta["val"] = value
    call = graph.call_function(torch.ops.aten._grouped_mm.default, (nodes[0], nodes[1]))
    graph.output(call)
    assert placement.graph_flops(torch.fx.GraphModule({}, graph)) == flops
