"""Walks a core ATen FX graph once and describes it for the C++ graph
compiler (torch_kiln._C._Program; csrc/kiln/python/program_bindings.cc).

Pointwise ops and reductions become element expressions the compiler fuses;
every other ATen op becomes an extern call that runs Kiln's own kernel for it
(compiled, or the library path for matmul and convolution). An op Kiln has no
kernel for fails the compile, naming the op and the user's source line,
unless fallback="eager" lets it run through the CPU fallback.
"""
import dataclasses
import operator

import torch
from torch._prims_common import is_non_overlapping_and_dense_or_false

from ..passes.effects import EFFECTFUL
from .fragments import ir_dtype
from .pointwise import lower_pointwise
from .reductions import lower_reduction


class UnsupportedOperatorError(RuntimeError):
    """An op in a compiled graph that Kiln cannot run on the device."""


@dataclasses.dataclass
class LoweredGraph:
    description: dict
    input_positions: list      # graph argument positions of the program's tensor inputs
    constant_inputs: list      # tensors bound after the arguments (lifted constants)
    outputs: list              # per graph output: ("value", i) into the program's outputs, or ("constant", x)
    eager_ops: list            # ops left to run eagerly through the CPU fallback
    node_count: int


def source_line(node):
    """'file:line: code' of the user's code that made `node`, or ''."""
    trace = node.meta.get("stack_trace") or ""
    lines = [line.strip() for line in trace.strip().splitlines()]
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith("File "):
            parts = lines[index].split(", ")
            file_name = parts[0][len("File "):].strip('"')
            line_number = parts[1].replace("line ", "") if len(parts) > 1 else "?"
            code = lines[index + 1] if index + 1 < len(lines) else ""
            return f"{file_name}:{line_number}: {code}"
    return ""


def _has_kernel(name, key):
    return torch._C._dispatch_has_kernel_for_dispatch_key(name, key)


def _out_overload(op):
    """The out= overload of `op` or, for an in-place op, of its functional
    form: the one whose arguments other than out= ones are `op`'s
    (scatter.value's and scatter_.value's is scatter.value_out, bernoulli.p's
    bernoulli.float_out), or None."""
    functional = [(argument.name, str(argument.type)) for argument in op._schema.arguments]
    base = op._schema.name.split("::")[-1]
    if base.endswith("_") and not base.startswith("__"):
        base = base[:-1]
    packet = getattr(torch.ops.aten, base, None)
    for overload in (packet.overloads() if packet is not None else []):
        candidate = getattr(packet, overload)
        arguments = candidate._schema.arguments
        if any(argument.is_out for argument in arguments) and functional == [
                (argument.name, str(argument.type)) for argument in arguments if not argument.is_out]:
            return candidate
    return None


_COMPOSITES_BESIDE_A_CPU_OUT_KERNEL = {"aten::narrow_copy"}


def has_kiln_kernel(op):
    """True when `op` runs on kiln without the CPU fallback: Kiln registers
    it, or a composite kernel breaks it into ops that reach the device.

    A CompositeExplicitAutogradNonFunctional kernel is one of two kinds. A
    structured op's (scatter.value, index_add) allocates the result and calls
    the op's out= overload, whose kernel is per backend (it has a CPU one):
    Kiln must register that overload. Any other's is written in other ops
    (lift_fresh_copy is a clone; slice_scatter and as_strided_scatter clone,
    take a view and copy_ into it; bernoulli.p fills with bernoulli_), and
    its out= overload, if any, is a composite too. narrow_copy's is a
    narrow and a clone although its out= overload has only a CPU kernel:
    nothing in the dispatcher tells it from a structured op, so it is named
    (the compiled OpInfo sweep found it; eager kiln runs it natively)."""
    name = op.name()
    if name in _COMPOSITES_BESIDE_A_CPU_OUT_KERNEL:
        return True
    if any(_has_kernel(name, key) for key in
           ("PrivateUse1", "CompositeExplicitAutograd", "CompositeImplicitAutograd")):
        return True
    if _has_kernel(name, "CompositeExplicitAutogradNonFunctional"):
        out = _out_overload(op)
        if out is None or not _has_kernel(out.name(), "CPU"):
            return True
        return _has_kernel(out.name(), "PrivateUse1")
    return False


def normalized_arguments(node):
    """Every schema argument of `node`'s op by name, defaults filled in."""
    schema = node.target._schema
    result = {}
    for index, argument in enumerate(schema.arguments):
        if index < len(node.args) and not argument.kwarg_only:
            result[argument.name] = node.args[index]
        elif argument.name in node.kwargs:
            result[argument.name] = node.kwargs[argument.name]
        elif argument.has_default_value():
            result[argument.name] = argument.default_value
        else:
            raise UnsupportedOperatorError(f"kiln: {node.target} is missing its argument '{argument.name}'")
    return result


def _concrete(value):
    """Python values with FX nodes of symbolic ints replaced by their ints."""
    if isinstance(value, torch.fx.Node):
        meta = value.meta.get("val")
        if isinstance(meta, (int, torch.SymInt)):
            return int(meta)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_concrete(item) for item in value)
    if isinstance(value, torch.SymInt):
        return int(value)
    return value


# (aten.copy(self, src) is what functionalization makes of `self.copy_(src)`:
# src in self's dtype and layout, so a no-op when src already has them.)
_COPIES = {torch.ops.aten._to_copy.default, torch.ops.aten.clone.default, torch.ops.aten.copy.default}
_NO_OP_CANDIDATES = _COPIES | {
    torch.ops.aten.expand.default, torch.ops.aten.view.default, torch.ops.aten.alias.default,
    torch.ops.aten.reshape.default, torch.ops.aten._unsafe_view.default,
}


def _writes(user, node):
    """Whether FX node `user` is an op that writes `node` in place."""
    if not isinstance(user.target, torch._ops.OpOverload) or not user.target._schema.is_mutable:
        return False
    for position, argument in enumerate(user.target._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = user.args[position] if position < len(user.args) else user.kwargs.get(argument.name)
        if value is node or (isinstance(value, (list, tuple)) and any(item is node for item in value)):
            return True
    return False


def _no_op_source(node):
    """The argument a no-op candidate's result equals: src for aten.copy,
    the first argument for the others."""
    if node.target is torch.ops.aten.copy.default:
        return node.args[1] if len(node.args) > 1 else node.kwargs.get("src")
    return node.args[0] if node.args else None


def _is_view(node):
    """Whether `node` returns a view of its first argument."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload) or not node.args:
        return False
    returns = node.target._schema.returns
    return (len(returns) == 1 and returns[0].alias_info is not None and not node.target._schema.is_mutable
            and isinstance(node.args[0], torch.fx.Node))


class _Lowering:
    def __init__(self, gm, fallback):
        self.gm = gm
        self.fallback = fallback
        self.values = []          # (ir dtype, sizes, strides)
        self.value_of = {}        # FX node (or (node, index)) -> value id
        self.nodes = []
        self.inputs = []
        self.input_positions = []
        self.constant_inputs = []
        self.eager_ops = []
        self.mutated_inputs = set()
        self.read_through = {}    # FX node -> the node whose value it reads (is_no_op)
        self.device_index = None
        self.pointwise_values = set()  # values made by pointwise nodes
        self.output_into_input = []    # (value, input index): see store_into_input_hint

    def new_value(self, meta):
        dtype = ir_dtype(meta.dtype) or "u8"  # other dtypes only pass through extern calls
        strides = list(meta.stride()) if is_non_overlapping_and_dense_or_false(meta) else None
        self.values.append((dtype, [int(size) for size in meta.shape], strides))
        if self.device_index is None and meta.device.type == "kiln":
            self.device_index = meta.device.index or 0
        return len(self.values) - 1

    def value(self, node):
        if node not in self.value_of:
            raise UnsupportedOperatorError(f"kiln: the compiled graph reads {node.name}, which is not a tensor")
        return self.value_of[node]

    def lower(self):
        argument_position = 0
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                meta = node.meta.get("val")
                if isinstance(meta, torch.Tensor):
                    self.value_of[node] = self.new_value(meta)
                    self.inputs.append(self.value_of[node])
                    self.input_positions.append(argument_position)
                argument_position += 1
            elif node.op == "get_attr":
                tensor = getattr(self.gm, node.target)
                self.value_of[node] = self.new_value(tensor)
                self.inputs.append(self.value_of[node])
                self.constant_inputs.append(tensor)
            elif node.op == "call_function":
                self.lower_call(node)
            elif node.op == "output":
                return self.outputs(node.args[0])
        raise UnsupportedOperatorError("kiln: the graph has no output")

    def outputs(self, results):
        outputs, program_outputs = [], []
        for result in (results if isinstance(results, (list, tuple)) else [results]):
            if isinstance(result, torch.fx.Node) and result in self.value_of:
                outputs.append(("value", len(program_outputs)))
                program_outputs.append(self.value_of[result])
            else:
                outputs.append(("constant", _concrete(result)))
        return outputs, program_outputs

    def lower_call(self, node):
        if node.target is operator.getitem:
            source, index = node.args
            key = (source, index)
            if key not in self.value_of:
                raise UnsupportedOperatorError(f"kiln: {node.name} reads a result that is not a tensor")
            self.value_of[node] = self.value_of[key]
            return
        if not isinstance(node.target, torch._ops.OpOverload):
            if isinstance(node.meta.get("val"), (int, torch.SymInt, float, bool)) or node.meta.get("val") is None:
                return  # size arithmetic on specialized shapes: its users see ints
            raise UnsupportedOperatorError(
                f"kiln cannot lower {node.target} in the compiled graph ({source_line(node) or node.name})")
        if self.is_no_op(node):
            source = _no_op_source(node)
            self.value_of[node] = self.value(source)
            self.read_through[node] = source
            return
        arguments = normalized_arguments(node)
        arguments = {name: _concrete(value) for name, value in arguments.items()}
        pointwise = lower_pointwise(node, arguments)
        if pointwise is not None:
            expression, inputs = pointwise
            self.value_of[node] = self.new_value(node.meta["val"])
            self.pointwise_values.add(self.value_of[node])
            self.nodes.append({"kind": "pointwise", "label": str(node.target),
                               "inputs": [self.value(n) for n in inputs],
                               "outputs": [self.value_of[node]], "expression": expression})
            return
        reduction = lower_reduction(node, arguments)
        if reduction is not None:
            reduce_op, dims, prologue, epilogue, source = reduction
            self.value_of[node] = self.new_value(node.meta["val"])
            self.nodes.append({"kind": "reduction", "label": str(node.target), "inputs": [self.value(source)],
                               "outputs": [self.value_of[node]], "expression": prologue,
                               "reduce_op": reduce_op, "reduced_dims": dims, "epilogue": epilogue})
            return
        self.lower_extern(node, arguments)

    def is_no_op(self, node):
        """A view, expand or alias whose result has its input's layout (the
        decompositions leave `expand(x, x.shape)` before batched products),
        or a copy to the same dtype and layout (batch norm's `_to_copy` of
        float32 statistics to float32), but not a copy that resolves a
        conjugate or negative view: the program reads the input itself,
        as Inductor's remove_noop_ops does. As an extern call, such a view
        would also end the kernel that computes its input, which then could
        not fuse into the copy after the view."""
        if node.target not in _NO_OP_CANDIDATES or not isinstance(_no_op_source(node), torch.fx.Node):
            return False
        source = _no_op_source(node)
        base, result = source.meta.get("val"), node.meta.get("val")
        if not isinstance(base, torch.Tensor) or not isinstance(result, torch.Tensor):
            return False
        if any(user.op == "output" for user in node.users):
            return False  # a graph output keeps its own tensor (AOTAutograd tracks its aliasing)
        if node.target in _COPIES:
            # An in-place write to the copy, to its input, or to anything
            # its input is a view of, needs the copy. (Reading one, as the
            # source of a copy_ into a graph input, does not.)
            chain = [node, source]
            while chain[-1] in self.read_through or _is_view(chain[-1]):
                chain.append(self.read_through.get(chain[-1], chain[-1].args[0]))
            if any(_writes(user, link) for link in chain for user in link.users):
                return False
        return (base.shape == result.shape and base.stride() == result.stride()
                and base.storage_offset() == result.storage_offset() and base.dtype == result.dtype
                and base.device == result.device and base.layout == result.layout
                and base.is_conj() == result.is_conj() and base.is_neg() == result.is_neg())

    def lower_extern(self, node, arguments):
        op = node.target
        if not has_kiln_kernel(op):
            where = source_line(node)
            if self.fallback != "eager":
                raise UnsupportedOperatorError(
                    f"kiln cannot lower {op} in the compiled graph: Kiln has no kernel for it"
                    + (f" (called from {where})" if where else "")
                    + '. Pass options={"fallback": "eager"} to torch.compile to run it eagerly, '
                    "on the CPU through the fallback, between compiled parts of the graph.")
            self.eager_ops.append((str(op), where))
        schema = op._schema
        positional, tensor_arguments, inputs = [], [], []
        for position, argument in enumerate(schema.arguments):
            value = arguments[argument.name]
            type_text = str(argument.type)
            if type_text in ("Tensor", "Optional[Tensor]") and isinstance(value, (bool, int, float, complex)):
                positional.append(value)  # a Python number where ATen takes a tensor (`x * 2`): wrapped
            elif type_text in ("Tensor", "Optional[Tensor]"):
                if value is not None:
                    inputs.append(self.value(value))
                tensor_arguments.append((position, "single", [None if value is None else self.value(value)]))
                positional.append(None)
            elif type_text in ("List[Tensor]", "List[Optional[Tensor]]"):
                ids = [None if item is None else self.value(item) for item in value]
                inputs.extend(i for i in ids if i is not None)
                kind = "list" if type_text == "List[Tensor]" else "optional_list"
                tensor_arguments.append((position, kind, ids))
                positional.append(None)
            else:
                positional.append(value)
        for position, argument in enumerate(schema.arguments):
            if argument.alias_info is not None and argument.alias_info.is_write:
                for _, _, ids in (entry for entry in tensor_arguments if entry[0] == position):
                    self.mutated_inputs.update(self.inputs.index(i) for i in ids if i in self.inputs)
        self.store_into_input_hint(node, arguments)
        results = self.extern_results(node, schema)
        self.nodes.append({
            "kind": "extern", "label": str(op), "name": schema.name, "overload": schema.overload_name,
            "inputs": list(dict.fromkeys(inputs)), "outputs": [value for _, _, value in results],
            "arguments": positional, "tensor_arguments": tensor_arguments, "results": results,
            "aliases_input": any(ret.alias_info is not None for ret in schema.returns),
            "has_side_effects": schema.is_mutable or bool(node.meta.get(EFFECTFUL)),
            "source_line": source_line(node),
            "static_view": self.static_view(node, schema, inputs, results)})

    def store_into_input_hint(self, node, arguments):
        """For `input.copy_(value)`, the write-back functionalization puts
        at the end of a graph that updates an input in place (an optimizer's
        parameters and state), where a pointwise node made `value` in the
        input's dtype, shape and contiguous layout: the hint that the kernel
        computing `value` may store it into the input, so the copy has
        nothing left to do. The program keeps the hint only where no later
        step reads the input, and checks the tensors at each run
        (aten/program/program.h)."""
        if node.target is not torch.ops.aten.copy_.default:
            return
        destination, source = arguments["self"], arguments["src"]
        if not isinstance(destination, torch.fx.Node) or not isinstance(source, torch.fx.Node):
            return
        target, value = self.value_of.get(destination), self.value_of.get(source)
        if target not in self.inputs or value not in self.pointwise_values:
            return
        target_meta, value_meta = destination.meta.get("val"), source.meta.get("val")
        if (not isinstance(target_meta, torch.Tensor) or not isinstance(value_meta, torch.Tensor)
                or target_meta.dtype != value_meta.dtype or target_meta.shape != value_meta.shape
                or target_meta.device != value_meta.device
                or not target_meta.is_contiguous() or not value_meta.is_contiguous()):
            return
        self.output_into_input.append((value, self.inputs.index(target)))

    @staticmethod
    def _layout(value):
        return (list(value.shape), list(value.stride()), int(value.storage_offset()))

    def static_view(self, node, schema, inputs, results):
        """For a view op (one tensor in, one view out): the base's layout and
        the view's, as the fake tensors give them. The program then makes the
        view itself, without a dispatcher call, when the base it gets at run
        time has that layout."""
        returns = schema.returns
        if (schema.is_mutable or len(returns) != 1 or returns[0].alias_info is None or len(results) != 1
                or results[0][1] != -1 or len(set(inputs)) != 1):
            return None
        base = next(arg for arg in node.all_input_nodes if isinstance(arg.meta.get("val"), torch.Tensor))
        base_meta, view_meta = base.meta["val"], node.meta["val"]
        if base_meta.dtype != view_meta.dtype or base_meta.device != view_meta.device:
            return None
        if (base_meta.is_conj(), base_meta.is_neg()) != (view_meta.is_conj(), view_meta.is_neg()):
            return None  # _conj, _neg_view: a view with a bit that a layout does not carry
        return (self._layout(base_meta), self._layout(view_meta))

    def extern_results(self, node, schema):
        meta = node.meta.get("val")
        returns = schema.returns
        results = []
        if len(returns) == 1 and str(returns[0].type) == "List[Tensor]":
            for index, item in enumerate(meta or []):
                value = self.new_value(item)
                self.value_of[(node, index)] = value
                results.append((0, index, value))
            return results
        if len(returns) == 1:
            if isinstance(meta, torch.Tensor):
                self.value_of[node] = self.new_value(meta)
                results.append((0, -1, self.value_of[node]))
            return results
        for index, item in enumerate(meta or []):
            if isinstance(item, torch.Tensor):
                value = self.new_value(item)
                self.value_of[(node, index)] = value
                results.append((index, -1, value))
        return results


def lower_graph(gm, fallback="error"):
    """The description of `gm` for torch_kiln._C._Program, and how to call it."""
    lowering = _Lowering(gm, fallback)
    outputs, program_outputs = lowering.lower()
    if lowering.device_index is None:
        lowering.device_index = torch.kiln.current_device()
    description = {
        "values": lowering.values, "inputs": lowering.inputs, "outputs": program_outputs,
        "nodes": lowering.nodes, "device_index": lowering.device_index,
        "mutated_inputs": sorted(lowering.mutated_inputs),  # program inputs written in place
        "output_into_input": lowering.output_into_input,
    }
    node_count = sum(1 for node in gm.graph.nodes if node.op == "call_function")
    return LoweredGraph(description, lowering.input_positions, lowering.constant_inputs, outputs,
                        lowering.eager_ops, node_count)
