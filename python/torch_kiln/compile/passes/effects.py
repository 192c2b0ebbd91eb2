"""Effectful ops out of their `with_effects` wrappers.

AOTAutograd wraps an op registered as having side effects (the error check
after a linalg op, `_linalg_check_errors`; a print) into the higher-order op
`with_effects(token, op, *args)`, which returns (token, *results): the token,
a graph input passed on to the graph's output, orders the effects across
graphs. A program runs its steps in graph order and never drops or moves one
with side effects, so the op becomes a plain call marked as such. The token
is None when the graph runs (AOTAutograd passes None and drops the returned
token), so it is no program input, and the graph returns None in its place;
Inductor lowers tokens to None too."""
import operator

import torch

EFFECTFUL = "kiln_effectful"  # node.meta key: the call has side effects


def unwrap_effects(gm):
    """Rewrites each with_effects node of `gm` into a call of its op."""
    graph = gm.graph
    tokens = set()
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.higher_order.with_effects:
            continue
        token, op, *arguments = node.args
        tokens.add(token)
        results = node.meta.get("val") or ()
        with graph.inserting_before(node):
            call = graph.call_function(op, tuple(arguments), dict(node.kwargs))
        call.meta = dict(node.meta)
        returns = op._schema.returns
        call.meta["val"] = results[1] if len(returns) == 1 else tuple(results[1:])
        call.meta[EFFECTFUL] = True
        for user in list(node.users):
            if user.op != "call_function" or user.target is not operator.getitem:
                raise RuntimeError(f"kiln: {user.name} reads {node.name}'s results other than by index")
            index = user.args[1]
            if index == 0:
                user.replace_all_uses_with(token)
            elif len(returns) == 1:
                user.replace_all_uses_with(call)
            else:
                user.args = (call, index - 1)
                continue
            graph.erase_node(user)
        graph.erase_node(node)
    if not tokens:
        return
    output = next(node for node in graph.nodes if node.op == "output")
    output.args = torch.fx.node.map_arg(output.args, lambda value: None if value in tokens else value)
    for token in tokens:
        if token.op == "placeholder":
            token.meta["val"] = None  # not a tensor when the graph runs
        elif not token.users:
            graph.erase_node(token)  # prims._make_token
    graph.lint()
    gm.recompile()
