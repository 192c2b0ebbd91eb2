"""Which ops ran on the kiln device, and how.

Every op that reaches the device is counted by the path it took:
``native`` (Kiln's runtime: allocation, views, copies, fill), ``compiled``
(a Kiln-generated kernel), ``library`` (a vendor-library call on device
memory) or ``fallback`` (copied to the CPU, run there, copied back).
"""
from . import _C


def get_executed_ops():
    """``{op name: {path: count}}`` for every op that ran on the device since
    the last :func:`clear_op_tracking`, e.g. ``{"aten::view": {"native": 3}}``."""
    return dict(_C._executed_ops())


def get_fallback_ops():
    """``{op name: count}`` for the ops that ran on the CPU through the fallback."""
    return {
        name: paths["fallback"]
        for name, paths in _C._executed_ops().items()
        if "fallback" in paths
    }


def clear_op_tracking():
    """Resets the counts behind :func:`get_executed_ops` and :func:`get_fallback_ops`."""
    _C._clear_op_tracking()


def get_fallback_mode():
    """``"warn"``, ``"silent"`` or ``"error"`` (initially from ``KILN_FALLBACK``)."""
    return _C._get_fallback_mode()


def set_fallback_mode(mode):
    """Sets what an op without a Kiln kernel does: ``"warn"`` (run on the CPU,
    warn once per op), ``"silent"`` or ``"error"`` (raise NotImplementedError)."""
    _C._set_fallback_mode(mode)
