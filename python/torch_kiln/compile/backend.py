"""The `kiln` backend of torch.compile.

    torch.compile(model, backend="kiln")
    torch.compile(model, backend="kiln", options={"fallback": "eager"})

The pipeline, one subpackage per stage:

  passes/    Dynamo's graph is rewritten (inference: batch norm folding,
             channels-last convolutions); AOTAutograd makes the forward and
             backward graphs, decomposed to core ATen with Kiln's
             decompositions (passes/decompositions.py); small products of
             inference graphs become reductions
  lowering/  each graph is lowered (lowering/graph_lowering.py), or its
             lowering loaded from the program cache, and handed to Kiln's
             graph compiler (torch_kiln._C._Program), which fuses its
             pointwise ops and reductions into kernels
  runtime/   the program runs on the current stream; after a graph's first
             call, its calls skip AOTAutograd's Python wrapper
             (runtime/program_function.py); runtime/statistics.py counts
             compile_stats()

Shapes are static: a new input shape compiles a new program under Dynamo's
guards (dynamic=True is refused; see torch_kiln.bucketing to bound
recompiles). Other `mode`s than the default warn and are ignored.
"""
import functools
import os
import time
import warnings

import torch

from .. import _C, library_ops
from .lowering import program_cache
from .lowering.graph_lowering import UnsupportedOperatorError, lower_graph
from .passes.channels_last import convolutions_to_channels_last
from .passes.decompositions import decompositions
from .passes.effects import unwrap_effects
from .passes import placement
from .passes.inference_folding import fold_for_inference
from .passes.small_products import expand_small_products
from .runtime import statistics
from .runtime.program_function import CompiledGraph

OPTIONS = {"fallback": ("error", "eager")}


class DynamicShapesError(RuntimeError):
    """torch.compile(..., dynamic=True) on the kiln backend."""


def _options(options):
    result = {"fallback": "error"}
    for name, value in (options or {}).items():
        if name not in OPTIONS:
            raise ValueError(f"kiln: unknown torch.compile option {name!r}; kiln takes {sorted(OPTIONS)}")
        if value not in OPTIONS[name]:
            raise ValueError(f"kiln: option {name!r} must be one of {OPTIONS[name]}, got {value!r}")
        result[name] = value
    return result


def _symbolic_sizes(gm):
    found = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value", node.meta.get("val"))
        if isinstance(value, torch.SymInt):
            found.append(value)
        elif isinstance(value, torch.Tensor):
            found.extend(size for size in value.shape if isinstance(size, torch.SymInt))
            found.extend(stride for stride in value.stride() if isinstance(stride, torch.SymInt))
    return found


def _make_static(gm):
    """Refuses dynamic=True; specializes the sizes Dynamo made symbolic on its
    own after a shape change (automatic dynamic shapes), so the graph is
    compiled for the shapes at hand and a new shape recompiles."""
    symbols = _symbolic_sizes(gm)
    if not symbols:
        return
    if not torch._dynamo.config.assume_static_by_default:
        raise DynamicShapesError(
            "kiln compiles static shapes only: torch.compile(..., dynamic=True) is not supported. "
            "Use dynamic=False (each new input shape compiles a new program) and "
            "torch_kiln.bucketing to pad inputs to a few sizes.")
    for symbol in symbols:
        symbol.node.guard_int("kiln: static shapes", 0)


def _dump(kind, gm, program, graph_index):
    directory = _C._dump_directory()
    if not directory:
        return
    folder = os.path.join(directory, "graphs")
    os.makedirs(folder, exist_ok=True)
    stem = os.path.join(folder, f"graph{graph_index:03d}-{kind}")
    with open(stem + ".fx.txt", "w") as file:
        file.write(gm.print_readable(print_output=False))
    with open(stem + ".ir-input.txt", "w") as file:
        file.write(program.input_graph_text())
    with open(stem + ".ir.txt", "w") as file:
        file.write(program.graph_text())
    with open(stem + ".fused.txt", "w") as file:
        file.write(program.fusion_text())


def _compile_graph(kind, options, graph, gm, example_inputs):
    start = time.perf_counter()
    unwrap_effects(gm)
    if kind == "inference":
        expand_small_products(gm)  # before the key and the dump: they see the graph lowered
    key = program_cache.graph_key(gm, options["fallback"], kind)
    lowered = program_cache.load(key)
    cache_hit = lowered is not None
    if not cache_hit:
        lowered = lower_graph(gm, fallback=options["fallback"])
        program_cache.store(key, lowered)
    # Forward and backward graphs of training are queued step by step, so the
    # Python between them overlaps with the device; an inference program runs
    # whole in the caller on an idle stream unless its steps are so small
    # that the host bounds it (passes/placement.py, docs/design/compiled_path.md).
    run_inline = kind == "inference" and placement.runs_inline(gm, lowered)
    program = _C._Program(dict(lowered.description, run_inline=run_inline))
    graph_index = statistics.record_graph(lowered, program.statistics(), time.perf_counter() - start,
                                          cache_hit, queued_inference=kind == "inference" and not run_inline)
    _dump(kind, gm, program, graph_index)
    if lowered.eager_ops:
        names = sorted({name for name, _ in lowered.eager_ops})
        warnings.warn(f"kiln: the compiled {kind} graph runs {', '.join(names)} eagerly "
                      "(fallback='eager'): the graph is split around them")
    runner = _Runner(program, lowered)
    graph.record(kind, runner)
    return runner


class _Runner:
    """Calls one program with AOTAutograd's boxed arguments: one list, which
    the runner empties so inputs are freed as soon as the program is done
    with them. Inputs on another device (an optimizer's CPU step counters)
    run as kiln copies, and those the graph writes in place are copied back,
    by the program itself (aten/program/program.h)."""

    def __init__(self, program, lowered):
        # An instance attribute, so wrappers that copy __dict__ keep it.
        self._boxed_call = True
        self.program = program
        self.positions = lowered.input_positions
        self.constants = list(lowered.constant_inputs)
        self.outputs = lowered.outputs
        self.first_run = True
        self.device = torch.device("kiln", lowered.description["device_index"])

    def __call__(self, arguments):
        tensors = [arguments[position] for position in self.positions]
        arguments.clear()
        if self.first_run:
            # Constants move once. The kernels of a new program compile on its
            # first run: count that as compile time.
            self.first_run = False
            self.constants = [tensor.to(self.device) for tensor in self.constants]
            before = _C._compiler_stats()
            results = self.program.run(tensors + self.constants)
            statistics.record_first_run(before, _C._compiler_stats())
        else:
            results = self.program.run(tensors + self.constants if self.constants else tensors)
        return [results[index] if kind == "value" else index for kind, index in self.outputs]


def kiln(gm, example_inputs, mode=None, options=None):
    """The torch.compile backend. `options`: {"fallback": "error" | "eager"}."""
    from torch._dynamo.backends.common import aot_autograd
    options = _options(options)
    if mode not in (None, "default"):
        warnings.warn(f"kiln: torch.compile mode={mode!r} is ignored; kiln has one mode")
    _make_static(gm)
    library_ops.register_if_defined()  # the graph may call other libraries' ops
    if not torch.is_grad_enabled():  # Dynamo guards on grad mode: this graph only runs for inference
        fold_for_inference(gm)
        convolutions_to_channels_last(gm)
    statistics.record_dynamo_graph()
    graph = CompiledGraph(gm, example_inputs)
    compiled = aot_autograd(
        fw_compiler=functools.partial(_compile_graph, "forward", options, graph),
        bw_compiler=functools.partial(_compile_graph, "backward", options, graph),
        inference_compiler=functools.partial(_compile_graph, "inference", options, graph),
        decompositions=decompositions(),
        keep_inference_input_mutations=True,
    )(gm, example_inputs)
    # Calls move to the C++ program function after the first
    # (runtime/program_function.py). Dynamo must not trace them, as it does not
    # trace AOTAutograd's.
    graph.aot_call = compiled
    return torch._dynamo.disable(graph.__call__, reason="kiln's compiled graph")


__all__ = ["kiln", "DynamicShapesError", "UnsupportedOperatorError"]
