"""Statistics of the kernel compiler and its cache (docs/design/kernel_cache.md):
the C kernels Kiln generates per op kind, compiled once and kept in memory and
under KILN_CACHE_DIR, for eager ops and compiled programs alike. (The
torch.compile backend's own counters are torch_kiln.compile's compile_stats.)"""
from . import _C


def compiler_stats():
    """Counters of the process-wide kernel cache, as a dict:

    kernels_compiled  kernels the C compiler built
    memory_hits       kernel look-ups served from this process's memory
    disk_hits         kernels loaded from the on-disk cache
    compile_seconds   wall time spent in the C compiler (float)
    compile_failures  kernels that failed to compile or load
    disk_evictions    cache entries removed to stay under KILN_CACHE_SIZE
    stale_files_removed  files left by processes killed mid-compile, removed
                      (older than an hour, or twice KILN_COMPILE_TIMEOUT)
    """
    return _C._compiler_stats()


def reset_compiler_stats():
    """Sets every counter of compiler_stats() back to zero."""
    _C._reset_compiler_stats()
