"""Small matrix products of inference graphs as generated reductions.

An mm or bmm of small float32/float64 operands, whose second operand is
contiguous along the output's columns and whose columns fill whole vectors,
becomes its product broadcast over the output and summed over the inner
dimension: `sum(a.unsqueeze(-1) * b.unsqueeze(-3), -2)`, one generated column
reduction, which also takes in the pointwise ops after it (its epilogue).
MKL's call costs more than the arithmetic at these sizes: the transformer's
attention scores (32 products of 16x8 by 8x16) took 14-24 us through MKL and
11-13 us generated, 8 products of 64x64 by 64x64 86-90 us against 51-54
(docs/history/performance-log.md). Where the second operand is strided along the columns
(a linear layer's transposed weight) the generated loads are gathers and MKL
stays far faster, as it does above the thresholds.

Only inference graphs are rewritten: in training graphs the transformer's
step got 0.5-1.3 % slower (its backward's products have other layouts).
"""
import torch

aten = torch.ops.aten

# Products at most this large (multiply-adds, and inner dimension) are rewritten.
SMALL_PRODUCT_MULTIPLY_ADDS = 1 << 21
SMALL_PRODUCT_DEPTH = 64


def is_small_product(first, second):
    """Whether the product of fake tensors `first` and `second` (mm or bmm
    operands) runs faster as a generated reduction."""
    if first.dtype not in (torch.float32, torch.float64) or second.dtype != first.dtype:
        return False
    if first.device.type != "kiln" or second.device != first.device:
        return False
    rows, depth = first.shape[-2], first.shape[-1]
    columns = second.shape[-1]
    batches = first.shape[0] if first.dim() == 3 else 1
    lanes = 8 if first.dtype == torch.float32 else 4
    size = batches * rows * depth * columns
    return (0 < size <= SMALL_PRODUCT_MULTIPLY_ADDS and depth <= SMALL_PRODUCT_DEPTH
            and columns % lanes == 0 and second.stride(-1) == 1)


def expand_small_products(gm):
    """Rewrites the small mm and bmm nodes of `gm` in place; returns how many."""
    graph = gm.graph
    rewritten = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in (aten.mm.default, aten.bmm.default):
            continue
        first, second = node.args
        first_value, second_value = first.meta.get("val"), second.meta.get("val")
        if not isinstance(first_value, torch.Tensor) or not isinstance(second_value, torch.Tensor):
            continue
        if not is_small_product(first_value, second_value):
            continue
        with graph.inserting_before(node):
            first_column = graph.call_function(aten.unsqueeze.default, (first, -1))
            second_row = graph.call_function(aten.unsqueeze.default, (second, -3))
            products = graph.call_function(aten.mul.Tensor, (first_column, second_row))
            total = graph.call_function(aten.sum.dim_IntList, (products, [-2]))
        with first_value.fake_mode:
            first_column.meta["val"] = first_value.unsqueeze(-1)
            second_row.meta["val"] = second_value.unsqueeze(-3)
            products.meta["val"] = first_column.meta["val"] * second_row.meta["val"]
            total.meta["val"] = torch.sum(products.meta["val"], [-2])
        for new in (first_column, second_row, products, total):
            if "stack_trace" in node.meta:
                new.meta["stack_trace"] = node.meta["stack_trace"]
        node.replace_all_uses_with(total)
        graph.erase_node(node)
        rewritten += 1
    if rewritten:
        gm.recompile()
    return rewritten
