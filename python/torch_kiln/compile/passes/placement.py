"""Where an inference program runs: whole in the caller, or queued step by step.

An inference program on an idle stream can run every step in the calling
thread (inline: no hand-off per step, and library calls get the process's
OpenMP team on the initial thread), or launch its steps on the stream as
training programs do (queued: the stream's worker runs them while the host
dispatches the next ones). Which is faster depends on whether the host or the
arithmetic bounds the program:

- Programs of large products and convolutions (CNNs, vision transformers,
  MLP-Mixer) spend their time in library calls. Inline, each call runs
  whole on PyTorch's OpenMP team; queued, it is cut into blocks over Kiln's
  pool while the host thread competes for the same cores. Inline took
  0.64-1.02 of the queued time on them.
- Programs of many small steps (mixture-of-experts routing: top-k, sort,
  histogram, gathers and scatters around small expert products; small
  convolutional nets) spend as long dispatching a step on the host as
  running it. Queued, the two overlap: mixture-of-experts inference steps
  took 1.3-1.7x less time queued.

The measure is the arithmetic per extern call: the floating-point operations
of the graph's products, convolutions and attention (counted from the
graph's shapes, as torch.utils.flop_counter counts them) over the number of
extern calls the program makes. At about 1 MFLOP a call, a call's
arithmetic on two cores takes about as long as the host takes to dispatch
it; below that the host bounds the program, and it is queued.
docs/design/compiled_path.md has the measurements.
"""
import torch
from torch.utils.flop_counter import flop_registry

# Below this many floating-point operations per extern call, an inference
# program is queued (see above).
QUEUED_BELOW_FLOPS_PER_CALL = 1.0e6


def _value(argument):
    return argument.meta.get("val") if isinstance(argument, torch.fx.Node) else argument


def _attention_flops(node):
    """Two products of [..., L, E] by [..., E, S]: the scores and their use."""
    query, key = _value(node.args[0]), _value(node.args[1])
    return 4 * query.numel() * key.shape[-2]


def _grouped_product_flops(node):
    """aten::_grouped_mm: each row, column or slice of the dim the offsets
    cut takes part in one group's product, so the flops are a whole
    product's: 2 m k n (times the groups, for the batched 3-d by 3-d form)."""
    a, b = _value(node.args[0]), _value(node.args[1])
    if a.dim() == 3 and b.dim() == 2:  # a's groups share b, whose columns are cut
        return 2 * a.numel() // max(1, a.shape[0]) * b.shape[-1]
    return 2 * a.numel() * b.shape[-1]


_OWN_FORMULAS = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _attention_flops,
    torch.ops.aten._grouped_mm: _grouped_product_flops,
}


def graph_flops(gm):
    """Floating-point operations of the graph's products, convolutions and
    attention; other ops count nothing."""
    total = 0
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        packet = getattr(node.target, "overloadpacket", None)
        if packet not in _OWN_FORMULAS and packet not in flop_registry:
            continue
        if any(_value(argument) is None for argument in node.all_input_nodes):
            continue  # a node a pass added without shapes
        if packet in _OWN_FORMULAS:
            total += _OWN_FORMULAS[packet](node)
        else:
            arguments = [_value(argument) for argument in node.args]
            keywords = {name: _value(argument) for name, argument in node.kwargs.items()}
            try:
                total += flop_registry[packet](*arguments, **keywords, out_val=node.meta.get("val"))
            except (TypeError, ValueError, IndexError, AttributeError):
                pass  # an overload the formula does not read: it counts nothing, the compile goes on
    return total


def runs_inline(gm, lowered):
    """Whether the inference program of `gm` runs whole in the caller (else queued)."""
    calls = sum(1 for node in lowered.description["nodes"] if node["kind"] == "extern")
    if calls == 0:
        return True
    return graph_flops(gm) >= QUEUED_BELOW_FLOPS_PER_CALL * calls
