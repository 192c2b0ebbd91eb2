"""Memory statistics, cache control and memory snapshots of torch.kiln, as in torch.cuda."""
import pickle
import sys

from .. import _C
from ._device import _device_index, _lazy_init


def memory_stats(device=None):
    """The caching allocator's statistics for ``device``, with torch.cuda's keys
    (``"allocated_bytes.all.current"``, ``"num_ooms"``, ...)."""
    _lazy_init()
    return dict(sorted(_C._memory_stats(_device_index(device, optional=True)).items()))


def memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device=None):
    _lazy_init()
    _C._reset_peak_memory_stats(_device_index(device, optional=True))


def reset_accumulated_memory_stats(device=None):
    _lazy_init()
    _C._reset_accumulated_memory_stats(_device_index(device, optional=True))


def empty_cache():
    """Returns cached, unused device memory to the device (every kiln device)."""
    if _C._is_initialized():
        _C._empty_cache()


def host_memory_stats():
    """The pinned host allocator's statistics: allocated_bytes and allocations
    (live), reserved_bytes and segments (live and cached)."""
    _lazy_init()
    return dict(_C._host_memory_stats())


def empty_host_cache():
    """Returns cached pinned host memory whose streams are done with it."""
    if _C._is_initialized():
        _C._host_empty_cache()


def mem_get_info(device=None):
    """``(free, total)`` bytes of ``device``'s capacity."""
    _lazy_init()
    return tuple(_C._mem_get_info(_device_index(device, optional=True)))


def _format_bytes(value):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024


def memory_summary(device=None, abbreviated=False):
    """A table of the allocator's statistics, like torch.cuda.memory_summary()."""
    stats = memory_stats(device)
    rows = [
        ("Allocated memory", "allocated_bytes", True),
        ("Active memory", "active_bytes", True),
        ("Requested memory", "requested_bytes", True),
        ("Reserved memory", "reserved_bytes", True),
        ("Allocations", "allocation", False),
        ("Active allocs", "active", False),
        ("Device reserved segments", "segment", False),
    ]
    pools = ["all"] if abbreviated else ["all", "large_pool", "small_pool"]
    index = _device_index(device, optional=True)
    title = f"kiln memory summary, device {'current' if index < 0 else index}"
    line = "|" + "-" * 86 + "|"
    out = [line, f"| {title:<84} |", line,
           f"| {'Metric':<32} | {'Cur Usage':>11} | {'Peak Usage':>11} | {'Tot Alloc':>11} | "
           f"{'Tot Freed':>8} |", line]
    for label, key, is_bytes in rows:
        for pool in pools:
            name = label if pool == "all" else f"  from {pool.replace('_', ' ')}"
            values = [stats[f"{key}.{pool}.{field}"]
                      for field in ("current", "peak", "allocated", "freed")]
            shown = [_format_bytes(v) if is_bytes else str(v) for v in values]
            out.append(f"| {name:<32} | {shown[0]:>11} | {shown[1]:>11} | {shown[2]:>11} | "
                       f"{shown[3]:>8} |")
        out.append(line)
    out.append(f"| {'Allocation retries: ' + str(stats['num_alloc_retries']):<42}"
               f"{'Out-of-memory errors: ' + str(stats['num_ooms']):<42} |")
    out.append(line)
    return "\n".join(out) + "\n"


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                           device=None, clear_history=False):
    """Records what the caching allocator does, for :func:`_snapshot`, as
    ``torch.cuda.memory._record_memory_history`` does.

    ``enabled``: ``None`` stops recording, ``"state"`` keeps the stack of each
    live allocation, ``"all"`` also keeps a history of the allocator's actions
    (``alloc``, ``free_requested``, ``free_completed``, ``segment_alloc``,
    ``segment_free``, ``oom``), the newest ``max_entries`` of them.
    ``context``: which actions keep a stack (``None``, ``"state"``, ``"alloc"``,
    ``"all"``); ``stacks``: ``"python"`` frames, or ``"all"`` with C++ frames.
    Applies to every kiln device (``device`` is accepted for torch.cuda's
    signature). ``True``/``False`` stand for ``"all"``/``None``. Stacks are not
    taken for memory freed by work the device runs (a stream's worker may not
    wait for the interpreter): those actions have no frames.
    """
    if isinstance(enabled, bool):
        enabled = "all" if enabled else None
    if not isinstance(max_entries, int) or max_entries <= 0:
        raise ValueError(f"_record_memory_history: max_entries must be a positive int, got {max_entries!r}")
    _lazy_init()
    _C._record_memory_history(enabled, context, stacks, max_entries, clear_history)


def _snapshot(device=None):
    """The allocator's state and recorded history, in ``torch.cuda.memory._snapshot()``'s
    format: ``{"segments": [...], "device_traces": [[...], ...]}``, one trace per
    kiln device. PyTorch's memory visualizer (``torch.cuda._memory_viz``,
    https://pytorch.org/memory_viz) reads it."""
    _lazy_init()
    return _C._memory_snapshot()


def _dump_snapshot(filename="dump_snapshot.pickle"):
    """Pickles :func:`_snapshot` to ``filename``, for https://pytorch.org/memory_viz."""
    snapshot = _snapshot()
    with open(filename, "wb") as f:
        pickle.dump(snapshot, f)
