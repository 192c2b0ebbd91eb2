"""Memory statistics and cache control of torch.kiln, as in torch.cuda."""
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
