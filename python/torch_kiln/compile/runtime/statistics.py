"""Counters of the compiled path: torch_kiln.compile_stats()."""
import threading

import torch

_lock = threading.Lock()
_counters = {}


def _zero():
    return {
        "graphs": 0,            # programs compiled (forward, backward and inference graphs)
        "nodes": 0,             # ATen nodes in those graphs
        "kernels": 0,           # fused kernels in those programs
        "fused_nodes": 0,       # pointwise and reduction nodes inside fused kernels
        "extern_calls": 0,      # nodes run as ATen ops on the device (matmul, convolution, views, ...)
        "eager_nodes": 0,       # nodes run eagerly through the CPU fallback (fallback="eager")
        "queued_inference_graphs": 0,  # inference programs queued step by step, not run inline (placement.py)
        "compile_seconds": 0.0,  # lowering and graph passes, plus kernel compiles on first runs
        "cache_hits": 0,        # graphs whose lowering came from the program cache on disk
        "kernels_compiled": 0,  # C compiles those first runs needed
        "kernel_cache_hits": 0,  # kernels those first runs found in the disk cache
        "kernel_compile_seconds": 0.0,  # their C compile time (a part of compile_seconds)
        "dynamo_graphs": 0,     # graphs Dynamo handed to the backend
        "recompiles": 0,        # of those, recompiles of a frame compiled before (new shapes, ...)
        "cpp_runtime_graphs": 0,     # Dynamo graphs whose later calls run through kiln's C++ program function
        "python_runtime_graphs": 0,  # Dynamo graphs that keep AOTAutograd's Python runtime
    }


def record_dynamo_graph():
    from torch._guards import CompileContext
    compile_id = CompileContext.current_compile_id()
    recompile = compile_id is not None and getattr(compile_id, "frame_compile_id", 0)
    with _lock:
        _counters["dynamo_graphs"] += 1
        if recompile:
            _counters["recompiles"] += 1


def record_graph(lowered, program_statistics, seconds, cache_hit, queued_inference=False):
    with _lock:
        _counters["graphs"] += 1
        _counters["cache_hits"] += int(cache_hit)
        _counters["nodes"] += lowered.node_count
        _counters["kernels"] += program_statistics["kernels"]
        _counters["fused_nodes"] += program_statistics["fused_nodes"]
        _counters["extern_calls"] += program_statistics["extern_calls"]
        _counters["eager_nodes"] += len(lowered.eager_ops)
        _counters["queued_inference_graphs"] += int(queued_inference)
        _counters["compile_seconds"] += seconds
        return _counters["graphs"]


def record_runtime(in_cpp):
    """A Dynamo graph has run each of its programs once and settled on its runtime."""
    with _lock:
        _counters["cpp_runtime_graphs" if in_cpp else "python_runtime_graphs"] += 1


def record_first_run(before, after):
    with _lock:
        _counters["compile_seconds"] += after["compile_seconds"] - before["compile_seconds"]
        _counters["kernel_compile_seconds"] += after["compile_seconds"] - before["compile_seconds"]
        _counters["kernels_compiled"] += after["kernels_compiled"] - before["kernels_compiled"]
        _counters["kernel_cache_hits"] += after["disk_hits"] - before["disk_hits"]


def compile_stats():
    """Counters of torch.compile with the kiln backend in this process, as a dict
    (see docs/design/compiled_path.md)."""
    with _lock:
        return dict(_counters)


def reset_compile_stats():
    with _lock:
        _counters.clear()
        _counters.update(_zero())


reset_compile_stats()
