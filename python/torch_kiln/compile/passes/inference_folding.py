"""Batch norm folded into the convolution before it, ReLU moved after the
max pool after it, and the convolution's bias added after either, in
inference graphs.

In eval mode a batch norm is a per-channel affine map of its input,
`(y - mean) * scale + beta` with `scale = gamma / sqrt(var + eps)`. When its
input is a 2-d convolution read by nothing else, the map goes into the
convolution's weight and bias (`W * scale`, `(b - mean) * scale + beta`): the
two small products are computed on every call (the statistics are graph
inputs, which the caller may change), and the pass over the convolution's
whole result disappears. This is the folding of TorchScript's freeze,
TensorRT and Inductor's freezing. The result differs from eager only by
rounding: W * scale is rounded before the convolution sums over it.

A ReLU read only by a max pool (values only, no indices) commutes with it:
the maximum of rectified values is the rectified maximum, NaN included. After
the pool the ReLU reads a quarter of the elements (a 2x2 pool) and joins the
pool's kernel.

A convolution's bias read only by a max pool (values only) or a ReLU is added
after it instead: the convolution is computed without bias (ATen's im2col
convolution would otherwise copy the bias into its whole output before its
GEMM accumulates onto it), and the addition joins the pool's or the ReLU's
kernel. Adding one value per channel commutes with the maximum over a
window of that channel, rounding included (rounding is monotonic), and after
a 2x2 pool it reads a quarter of the elements. The sum is rounded in another
order than ATen's (the GEMM's products, then the bias), so results differ
from eager by rounding.

All three run on Dynamo's graph of an inference graph (compiled under
torch.no_grad; Dynamo guards on grad mode and on the module's training flag,
which batch_norm's `training=False` argument records).
"""
import torch
import torch.nn.functional as functional

from .channels_last import CONVOLUTION
_RELUS = (torch.relu, functional.relu)
_MAX_POOLS = (functional.max_pool2d, torch.max_pool2d)
_FLOATING = (torch.float32, torch.float64)


def _example(node):
    value = node.meta.get("example_value") if isinstance(node, torch.fx.Node) else None
    return value if isinstance(value, torch.Tensor) else None


def _argument(node, position, name, default=None):
    if len(node.args) > position:
        return node.args[position]
    return node.kwargs.get(name, default)


def _add(graph, target, arguments, example):
    node = graph.call_function(target, arguments)
    node.meta["example_value"] = example
    return node


def _scale(graph, variance, gamma, epsilon):
    """gamma / sqrt(variance + epsilon) (no gamma: 1 / sqrt(...)), in `graph`."""
    shifted = _add(graph, torch.add, (variance, epsilon), _example(variance) + epsilon)
    scale = _add(graph, torch.rsqrt, (shifted,), torch.rsqrt(shifted.meta["example_value"]))
    if gamma is not None:
        scale = _add(graph, torch.mul, (scale, gamma), scale.meta["example_value"] * _example(gamma))
    return scale


def _broadcast_to(graph, vector, shape):
    """Per-filter `vector` broadcast to a weight of `shape` (None stays None)."""
    if vector is None:
        return None
    column = _add(graph, torch.reshape, (vector, (-1, 1, 1, 1)), _example(vector).reshape(-1, 1, 1, 1))
    return _add(graph, torch.Tensor.expand, (column, tuple(shape)), column.meta["example_value"].expand(shape))


def _fold_batch_norm(graph, norm):
    """Folds eval-mode batch_norm node `norm` into the conv2d it reads; False
    when the pattern does not hold."""
    convolution = norm.args[0] if norm.args else None
    if (not isinstance(convolution, torch.fx.Node) or convolution.op != "call_function"
            or convolution.target is not CONVOLUTION or len(convolution.users) != 1
            or convolution.kwargs or len(convolution.args) < 2):
        return False
    if _argument(norm, 5, "training", False) is not False:
        return False
    mean, variance = _argument(norm, 1, "running_mean"), _argument(norm, 2, "running_var")
    gamma, beta = _argument(norm, 3, "weight"), _argument(norm, 4, "bias")
    epsilon = _argument(norm, 7, "eps", 1e-5)
    if not isinstance(mean, torch.fx.Node) or not isinstance(variance, torch.fx.Node):
        return False
    weight = convolution.args[1]
    bias = convolution.args[2] if len(convolution.args) > 2 else None
    tensors = [node for node in (convolution.args[0], weight, bias, mean, variance, gamma, beta) if node is not None]
    examples = [_example(node) for node in tensors]
    if any(example is None for example in examples) or not isinstance(epsilon, float):
        return False
    dtype = examples[0].dtype
    if dtype not in _FLOATING or any(example.dtype != dtype for example in examples):
        return False
    if _example(weight).dim() != 4 or _example(mean).dim() != 1:
        return False
    mode = examples[0].fake_mode
    with graph.inserting_before(convolution), mode:
        scale = _scale(graph, variance, gamma, epsilon)
        # The weight's scale is computed at the weight's shape, from the
        # statistics broadcast to it (views of graph inputs), so the whole of
        # W * scale is one kernel; a per-filter scale viewed as a column would
        # be a kernel of its own, which fusion does not look through.
        filters = _scale(graph, _broadcast_to(graph, variance, _example(weight).shape),
                         _broadcast_to(graph, gamma, _example(weight).shape), epsilon)
        folded_weight = _add(graph, torch.mul, (weight, filters), _example(weight) * filters.meta["example_value"])
        centred = _add(graph, torch.neg, (mean,), -_example(mean)) if bias is None else \
            _add(graph, torch.sub, (bias, mean), _example(bias) - _example(mean))
        folded_bias = _add(graph, torch.mul, (centred, scale),
                           centred.meta["example_value"] * scale.meta["example_value"])
        if beta is not None:
            folded_bias = _add(graph, torch.add, (folded_bias, beta),
                               folded_bias.meta["example_value"] + _example(beta))
    convolution.args = (convolution.args[0], folded_weight, folded_bias) + tuple(convolution.args[3:])
    convolution.meta["example_value"] = _example(norm)
    norm.replace_all_uses_with(convolution)
    graph.erase_node(norm)
    return True


def _pool_before_relu(graph, pool):
    """relu(x) -> max_pool2d into max_pool2d(x) -> relu; False when `pool`
    returns indices or its input is not a ReLU read only by it."""
    relu = pool.args[0] if pool.args else None
    if (not isinstance(relu, torch.fx.Node) or relu.op != "call_function" or relu.target not in _RELUS
            or len(relu.users) != 1 or relu.kwargs.get("inplace", False) or len(relu.args) != 1):
        return False
    if _argument(pool, 6, "return_indices", False) is not False or _example(pool) is None:
        return False
    pool.args = (relu.args[0],) + tuple(pool.args[1:])
    with graph.inserting_after(pool):
        rectified = graph.call_function(torch.relu, (pool,))
    rectified.meta["example_value"] = _example(pool)
    pool.replace_all_uses_with(rectified, delete_user_cb=lambda user: user is not rectified)
    graph.erase_node(relu)
    return True


def _bias_after(graph, convolution):
    """conv2d(x, w, b) -> pool or relu into conv2d(x, w) -> pool or relu,
    then + b per channel; False when the convolution has no bias or another
    reader."""
    if (convolution.target is not CONVOLUTION or convolution.kwargs or len(convolution.args) < 3
            or len(convolution.users) != 1):
        return False
    bias, reader = convolution.args[2], next(iter(convolution.users))
    if not isinstance(bias, torch.fx.Node) or _example(bias) is None or _example(bias).dim() != 1:
        return False
    if _example(convolution) is None or _example(convolution).dim() != 4:
        return False
    if reader.op != "call_function" or reader.args[:1] != (convolution,) or _example(reader) is None:
        return False
    if reader.target in _MAX_POOLS:
        if _argument(reader, 6, "return_indices", False) is not False:
            return False
        after = reader  # the bias is added to the pool's result
    elif reader.target in _RELUS and not reader.kwargs.get("inplace", False) and len(reader.args) == 1:
        after = convolution  # the bias is added before the ReLU, in its kernel
    else:
        return False
    result = _example(after)
    with result.fake_mode:
        with graph.inserting_after(after):
            column = _add(graph, torch.reshape, (bias, (-1, 1, 1)), _example(bias).reshape(-1, 1, 1))
        with graph.inserting_after(column):
            biased = _add(graph, torch.add, (after, column), result + column.meta["example_value"])
    after.replace_all_uses_with(biased, delete_user_cb=lambda user: user is not biased)
    convolution.args = convolution.args[:2] + (None,) + tuple(convolution.args[3:])
    return True


def fold_for_inference(gm):
    """Rewrites `gm` in place; returns (batch norms folded, ReLUs moved,
    biases moved)."""
    graph = gm.graph
    folded = moved = biases = 0
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is functional.batch_norm:
            folded += _fold_batch_norm(graph, node)
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in _MAX_POOLS:
            moved += _pool_before_relu(graph, node)
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is CONVOLUTION:
            biases += _bias_after(graph, node)
    if folded or moved or biases:
        graph.lint()
        gm.recompile()
    return folded, moved, biases
