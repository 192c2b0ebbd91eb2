"""Reductions of core ATen graphs (sum, mean, amax, amin, any) as a folded
element value and an epilogue on the accumulator, in the fragment dialect.

As ATen's CPU kernels do, a reduction accumulates in its output's compute
dtype (float32 for the half types, int64 for sums of integers and bools) and
rounds once when it stores.
"""
import math

import torch

from .fragments import Fragment, ir_dtype

aten = torch.ops.aten

# op -> (IR reduction, name of the dims argument or None for all dims)
_REDUCTIONS = {
    aten.sum.dim_IntList: ("sum", "dim"),
    aten.sum.default: ("sum", None),
    aten.mean.dim: ("sum", "dim"),
    aten.mean.default: ("sum", None),
    aten.amax.default: ("max", "dim"),
    aten.amin.default: ("min", "dim"),
    aten.any.dim: ("any", "dim"),
    aten.any.dims: ("any", "dim"),
    aten.any.default: ("any", None),
}


def _reduced_dims(dims, rank):
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({dim % rank for dim in dims})


def lower_reduction(node, arguments):
    """(reduce_op, reduced dims, prologue, epilogue, input node) of reduction
    `node`, or None when it is not one Kiln fuses."""
    if node.target not in _REDUCTIONS:
        return None
    reduce_op, dims_name = _REDUCTIONS[node.target]
    source = arguments["self"]
    output = node.meta.get("val")
    if not isinstance(source, torch.fx.Node) or not isinstance(output, torch.Tensor):
        return None
    value = source.meta["val"]
    if ir_dtype(value.dtype) is None or ir_dtype(output.dtype) is None or value.dim() == 0 or value.numel() == 0:
        return None
    dims = _reduced_dims(arguments.get(dims_name) if dims_name else None, value.dim())
    accumulate = torch.bool if reduce_op == "any" else output.dtype
    prologue = Fragment([value.dtype])
    prologue.cast(prologue.load(0), accumulate, source_dtype=value.dtype)
    epilogue = Fragment()
    result = epilogue.accumulator(accumulate)
    if node.target in (aten.mean.dim, aten.mean.default):
        count = math.prod(value.shape[dim] for dim in dims)
        result = epilogue.op("divide", result, epilogue.constant(count, output.dtype))
    epilogue.entries.append(("cast", result, ir_dtype(output.dtype)))
    return reduce_op, dims, prologue.entries, epilogue.entries, source
