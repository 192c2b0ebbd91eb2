"""Channels-last convolutions for inference graphs.

oneDNN's CPU convolutions are faster on channels-last (NHWC) data, and Kiln's
pool decomposition and fused kernels keep that layout from one convolution to
the next, so an inference graph (compiled under torch.no_grad) reads each 2-d
convolution's input and weight in channels-last: the convolution then runs
channels-last and its result, and everything computed from it, stays so. The
CNN's inference program: 488-570 us against 532-625 in NCHW, in turns in one
process (the input alone converted: 498-582). Inductor lays CPU convolutions
out the same way. Training graphs keep the user's layout (their steps were not
faster channels-last; docs/performance.md). 4-d graph outputs keep the
strides Dynamo traced.

The pass runs on Dynamo's graph, before AOTAutograd traces it; the user's
tensors are not touched, and a model already in channels-last is unchanged.
"""
import torch

CONVOLUTION = torch.conv2d  # also torch.nn.functional.conv2d, the same builtin


def _is_four_dimensional(node):
    value = node.meta.get("example_value")
    return isinstance(value, torch.Tensor) and value.dim() == 4


def convolutions_to_channels_last(gm):
    """Makes the input and weight of each 2-d convolution in `gm` channels-last
    (a copy only where they are not already); returns how many convolutions
    it changed."""
    changed = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not CONVOLUTION or not node.args:
            continue
        operands = list(node.args[:2])
        if len(operands) < 2 or not all(isinstance(operand, torch.fx.Node) and _is_four_dimensional(operand)
                                        for operand in operands):
            continue
        for position, operand in enumerate(operands):
            with gm.graph.inserting_before(node):
                laid_out = gm.graph.call_method("contiguous", (operand,), {"memory_format": torch.channels_last})
            example = operand.meta["example_value"]
            with example.fake_mode:
                laid_out.meta["example_value"] = example.contiguous(memory_format=torch.channels_last)
            operands[position] = laid_out
        node.args = tuple(operands) + tuple(node.args[2:])
        changed += 1
    if changed:
        _keep_output_layouts(gm)
        gm.recompile()
    return changed


def _keep_output_layouts(gm):
    """A 4-d graph output that Dynamo traced contiguous is returned contiguous
    (a copy only where the channels-last convolutions made it channels-last),
    so the caller gets eager's strides."""
    output = next(node for node in gm.graph.nodes if node.op == "output")
    results = output.args[0]
    if not isinstance(results, (tuple, list)):
        return
    kept = []
    for result in results:
        if isinstance(result, torch.fx.Node) and _is_four_dimensional(result) \
                and result.meta["example_value"].is_contiguous():
            with gm.graph.inserting_before(output):
                laid_out = gm.graph.call_method("contiguous", (result,))
            laid_out.meta["example_value"] = result.meta["example_value"]
            result = laid_out
        kept.append(result)
    output.args = (type(results)(kept),) + tuple(output.args[1:])
