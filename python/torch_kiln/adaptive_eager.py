"""Adaptive eager (docs/design/adaptive_eager.md): while the host runs ahead of
the device, runs of queued pointwise ops are fused into one kernel each, with
the same results bit for bit. On by default; KILN_ADAPTIVE_EAGER=0,
set_adaptive_eager(False) or torch.use_deterministic_algorithms(True) turn it
off."""
from . import _C


def adaptive_eager_mode():
    """'on', 'off' or 'always' (ops held even on an idle stream: for tests)."""
    return _C._adaptive_eager_mode()


def set_adaptive_eager(mode):
    """Turns adaptive eager on (True or 'on'), off (False or 'off'), or to
    'always'. Ops already held still run with their region."""
    if mode is True:
        mode = "on"
    elif mode is False:
        mode = "off"
    _C._set_adaptive_eager_mode(mode)


def adaptive_eager_stats():
    """Counters since the start or the last reset, as a dict:

    ops_held          launches held in a region (pointwise ops, and reductions of their results)
    regions_fused     regions run as one fused kernel
    ops_fused         ops in those regions (a reduction and its prologue included)
    reductions_fused  reductions run with their region's ops inside, as prologue
    row_kernels_fused of those, run as one row kernel with the pointwise ops
                      over their input's elements after them (a normalisation)
    regions_unfused   regions of 2+ ops run op by op (their kernel was compiling)
    single_ops        regions of one op
    bytes_not_stored  bytes of intermediates fused kernels did not store
    region_keys       distinct regions seen (keys of the fused-kernel cache)
    kernels_compiled  fused kernels made ready (compiled, or loaded from disk)
    compile_failures  fused kernels that failed (their regions run unfused)
    compiles_pending  fused kernels queued or compiling now
    """
    return _C._adaptive_eager_stats()


def reset_adaptive_eager_stats():
    """Zeroes the counters and forgets the regions seen; their kernels stay
    loaded, so a region seen again finds its kernel at once."""
    _C._reset_adaptive_eager()
