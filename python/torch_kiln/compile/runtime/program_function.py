"""Compiled graphs called through kiln's C++ program function.

AOTAutograd wraps a training graph's compiled forward and backward in a Python
autograd.Function whose prologues and epilogues handle input mutations,
aliased outputs, RNG state, tensor subclasses and tangent layouts. Kiln keeps
AOTAutograd for compiling, and for every graph's first forward and backward.
After those, a graph that needs none of the rarer duties is called through
_C._ProgramFunction, which does the rest of the wrapper's work in C++: it runs
the forward program, saves the tensors the backward reads and marks the
outputs that need no gradient. On backward it lays out the gradients as they
were traced and runs the backward program. No Python runs on either side; the
backward needs no GIL on whichever thread autograd runs it. An inference
graph's calls go the same way, to its one program under no_grad, skipping
AOTAutograd's inference wrapper and the backend's Python runner.
(csrc/kiln/aten/program/program_function.h lists what it does as AOTAutograd
does; docs/design/compiled_path.md has the figures.)

Inputs the graph writes in place (batch norm's running statistics) are
written by the program itself, as AOTAutograd leaves them in the graph; the
C++ function moves their version counters first, as AOTAutograd does.

A graph that does need the rest keeps AOTAutograd's runtime: input mutations
left outside the graph or of metadata, outputs that alias inputs or each other,
intermediate bases, functionalized RNG, effect tokens, saved symbolic sizes or
opaque objects, tensor subclasses, duplicated inputs, autocast, and graphs
whose inputs are not plain tensors. A training graph's forward also goes
through AOTAutograd while compiled autograd is on, which traces the backward
node AOTAutograd makes (kiln's C++ node is opaque to it). A training graph
whose backward never runs (a model called with grad enabled and never
backpropagated) never settles, and keeps AOTAutograd's runtime.
"""
import threading

import torch
from torch._dynamo import compiled_autograd as _compiled_autograd
from torch._functorch._aot_autograd.schemas import MutationType, OutputType, PlainTensorMeta

from ... import _C
from . import statistics


def _plain_tensors(values):
    return all(type(value) in (torch.Tensor, torch.nn.Parameter) for value in values)


def _distinct_storages(tensors):
    """No two inputs share memory: AOTAutograd would dedupe or merge them."""
    storages = [tensor.untyped_storage().data_ptr() for tensor in tensors if tensor.untyped_storage().nbytes() > 0]
    return len(storages) == len(set(storages))


class CompiledGraph:
    """One Dynamo graph as Dynamo calls it: a training graph (forward and
    backward programs) or an inference graph (one program).

    Calls go to AOTAutograd's runtime (aot_call) until every program of the
    graph has run once, so its kernels are compiled and its constants moved;
    then to _C._ProgramFunction when the graph qualifies, else to AOTAutograd
    for good."""

    def __init__(self, gm, example_inputs):
        self.runners = {}
        self.metadata = None
        self.aot_call = None
        self.fast = None
        self.settled = False
        self.lock = threading.Lock()
        # Tensors Dynamo installed on the graph module instead of passing
        # them (an optimizer's parameters and state): AOTAutograd lifts them
        # to the graph's first inputs, read once here as it reads them
        # (aot_module_simplified), and Dynamo guards on their identity.
        self.lifted = [*dict(gm.named_parameters(remove_duplicate=False)).values(),
                       *dict(gm.named_buffers(remove_duplicate=False)).values()]
        inputs = [*self.lifted, *example_inputs]
        self.arguments = len(inputs)
        self.inputs_qualify = (
            _plain_tensors(inputs)
            and _distinct_storages(inputs)
            and not torch._C._is_any_autocast_enabled())

    @property
    def training(self):
        return "forward" in self.runners

    def record(self, kind, runner):
        """Called by the backend's graph compiler for each program of this graph."""
        self.runners[kind] = runner
        if kind in ("forward", "inference"):
            context = torch._guards.TracingContext.try_get()
            self.metadata = None if context is None else context.fw_metadata

    def __call__(self, *arguments):
        fast = self.fast
        if fast is not None and not (_compiled_autograd.compiled_autograd_enabled and self.training):
            return fast([*self.lifted, *arguments] if self.lifted else arguments)
        result = self.aot_call(*arguments)
        if not self.settled:
            self._settle()
        return result

    def _settle(self):
        kinds = ("forward", "backward") if self.training else ("inference",)
        runners = [self.runners.get(kind) for kind in kinds]
        if any(runner is None or runner.first_run for runner in runners):
            return  # a program has not run yet (a training graph's backward, say)
        with self.lock:  # two threads may finish their first calls together
            if self.settled:
                return
            description = self._describe()
            if description is not None:
                self.fast = _C._ProgramFunction(description)
            self.settled = True
        statistics.record_runtime(self.fast is not None)

    def _describe(self):
        """The _C._ProgramFunction description of this graph, or None when it
        needs AOTAutograd's runtime (the module docstring lists why)."""
        metadata = self.metadata
        forward = self.runners["forward" if self.training else "inference"]
        if not self.inputs_qualify or metadata is None or not _simple(metadata):
            return None
        if len(metadata.input_info) != self.arguments or any(kind != "value" for kind, _ in forward.outputs):
            return None
        description = {
            "forward": forward.program,
            "forward_positions": list(forward.positions),
            "forward_constants": list(forward.constants),
            "forward_results": [index for _, index in forward.outputs],
            "mutated_arguments": (list(metadata.mutated_graph_handled_indices_seen_by_autograd)
                                  if metadata.keep_input_mutations else []),
            "outputs": metadata.num_outputs,
        }
        if not self.training:
            return description if len(forward.outputs) == metadata.num_outputs else None
        backward = self.runners["backward"]
        if len(backward.outputs) != self.arguments:
            return None
        if any(kind != "value" and value is not None for kind, value in backward.outputs):
            return None
        graph_outputs = len(forward.outputs)
        checked = metadata.tensors_saved_for_backwards_with_vc_check_slice.indices(graph_outputs)[:2]
        unchecked = metadata.tensors_saved_for_backwards_no_vc_check_slice.indices(graph_outputs)[:2]
        if metadata.num_tensors_saved_with_no_vc_check == 0:
            unchecked = (graph_outputs, graph_outputs)
        saved = (checked[1] - checked[0]) + (unchecked[1] - unchecked[0])
        if len(metadata.saved_tensor_is_graph_input) != saved:
            return None
        tangent_outputs = [index for index, info in enumerate(metadata.output_info)
                           if issubclass(info.raw_type, torch.Tensor) and info.requires_grad_for_backward]
        layouts = [_tangent_layout(meta) for meta in metadata.subclass_tangent_meta]
        if len(layouts) != len(tangent_outputs) or any(layout is None for layout in layouts):
            return None
        description.update({
            "backward": backward.program,
            "checked": checked,
            "unchecked": unchecked,
            "saved_is_graph_input": list(metadata.saved_tensor_is_graph_input),
            "non_differentiable": [index for index, info in enumerate(metadata.output_info)
                                   if not info.requires_grad],
            "tangent_outputs": tangent_outputs,
            "tangent_layouts": layouts,
            "backward_positions": list(backward.positions),
            "backward_constants": list(backward.constants),
            "gradient_results": [index if kind == "value" else -1 for kind, index in backward.outputs],
            "compiled_nondeterministic": metadata.deterministic is False,
        })
        return description


def _simple(metadata):
    """Whether AOTAutograd's runtime would do nothing for this graph beyond
    what _C._ProgramFunction does."""
    return (
        metadata.num_mutated_inp_runtime_indices == 0
        and metadata.num_intermediate_bases == 0
        and metadata.num_unsafe_view_outputs == 0
        and metadata.num_outputs_rng_offset == 0
        and not metadata.is_rng_op_functionalized
        and not metadata.tokens
        and metadata.num_backward_tokens == 0
        and metadata.num_forward_returns == metadata.num_outputs
        and metadata.num_forward == metadata.num_outputs
        and not metadata.num_symints_saved_for_bw
        and not metadata.num_opaque_objects_saved_for_bw
        and not metadata.dynamic_saved_tensors_idxs
        and not metadata.indices_of_inputs_that_requires_grad_with_mutations_in_bw
        and all(info.mutation_type in (MutationType.NOT_MUTATED, MutationType.MUTATED_IN_GRAPH)
                and not info.mutates_metadata for info in metadata.input_info)
        and all(info.output_type == OutputType.non_alias and issubclass(info.raw_type, torch.Tensor)
                for info in metadata.output_info))


_FORMAT_NAMES = {torch.contiguous_format: "contiguous_format", torch.channels_last: "channels_last",
                 torch.channels_last_3d: "channels_last_3d"}


def _tangent_layout(meta):
    """(memory format name or None, sizes, strides) of a plain tangent's traced
    layout; None for a subclass's or one kiln cannot name."""
    if not isinstance(meta, PlainTensorMeta) or meta.memory_format is None:
        return None
    layout = meta.memory_format
    if layout.memory_format is not None:
        name = _FORMAT_NAMES.get(layout.memory_format)
        return None if name is None else (name, [], [])
    if layout.size is None or layout.stride is None:
        return None
    return (None, [int(size) for size in layout.size], [int(stride) for stride in layout.stride])
