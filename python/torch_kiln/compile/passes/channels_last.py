"""Channels-last convolutions for inference graphs.

oneDNN's CPU convolutions are faster on channels-last (NHWC) data, and Kiln's
pool decomposition and fused kernels keep that layout from one convolution to
the next, so an inference graph (compiled under torch.no_grad) reads each 2-d
convolution's input and weight in channels-last: the convolution then runs
channels-last and its result, and everything computed from it, stays so. The
CNN's inference program: 488-570 us against 532-625 in NCHW, in turns in one
process (the input alone converted: 498-582). Inductor lays CPU convolutions
out the same way. Training graphs keep the user's layout (their steps were not
faster channels-last; docs/history/performance-log.md). 4-d graph outputs keep the
strides Dynamo traced.

The exception: a convolution that Kiln computes straight into device memory
in its traced layout but not in channels-last (aten/library/convolution.cc
decides; typically an image model's first layer, whose few input channels
make channels-last im2col copy runs of 3 elements) keeps its layout. The
CNN's inference program ran 50 us faster (332.7 against 283.3 us) with its
first convolution left NCHW.

The pass runs on Dynamo's graph, before AOTAutograd traces it; the user's
tensors are not touched, and a model already in channels-last is unchanged.
"""
import torch

from ... import _C

CONVOLUTION = torch.conv2d  # also torch.nn.functional.conv2d, the same builtin


def _is_four_dimensional(node):
    value = node.meta.get("example_value")
    return isinstance(value, torch.Tensor) and value.dim() == 4


def _pair(value):
    """A conv2d argument (an int or two) as two ints; None when it is not one."""
    if isinstance(value, int):
        return [value, value]
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return list(value)
    return None


def _direct_only_as_traced(node):
    """Whether Kiln's convolution computes `node` straight into device memory
    in its traced layouts and would not in channels-last."""
    arguments = dict(zip(("input", "weight", "bias", "stride", "padding", "dilation", "groups"), node.args))
    arguments.update(node.kwargs)
    padding = arguments.get("padding", 0)
    stride, dilation = _pair(arguments.get("stride", 1)), _pair(arguments.get("dilation", 1))
    padding = [0, 0] if padding == "valid" else _pair(padding)
    groups = arguments.get("groups", 1)
    if stride is None or padding is None or dilation is None or not isinstance(groups, int):
        return False
    traced = [arguments["input"].meta["example_value"], arguments["weight"].meta["example_value"]]
    with traced[0].fake_mode:
        laid_out = [value.contiguous(memory_format=torch.channels_last) for value in traced]
    return (_C._convolution_writes_output_directly(*traced, stride, padding, dilation, groups)
            and not _C._convolution_writes_output_directly(*laid_out, stride, padding, dilation, groups))


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
        if _direct_only_as_traced(node):
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
