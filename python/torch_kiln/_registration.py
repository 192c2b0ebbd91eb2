"""Makes ``kiln`` a PyTorch device: names PrivateUse1, registers ``torch.kiln``
and generates the ``.kiln()`` / ``.is_kiln`` methods. Runs once per process."""
import os
import warnings

import torch

_registered = False
_AUTOGRAD_THREADS = ("caller", "device")

_QUANTIZED_DTYPES = [torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4]


def register():
    global _registered
    if _registered:
        return
    from . import _C, device

    problems = _C._config_problems()
    if problems:
        warnings.warn("kiln configuration: " + problems.strip(), stacklevel=2)
    torch.utils.rename_privateuse1_backend("kiln")
    torch._register_device_module("kiln", device)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True,
        for_module=True,
        for_packed_sequence=True,
        for_storage=True,
        unsupported_dtype=_QUANTIZED_DTYPES,
    )
    _choose_autograd_thread()
    _registered = True


def _choose_autograd_thread():
    """Where backward runs for kiln tensors, per KILN_AUTOGRAD_THREAD.

    PyTorch's autograd engine gives each accelerator device a thread of its
    own, which suits a GPU: the host thread queues kernels while the device
    computes. Kiln's device is the host's own cores, so that thread only adds
    a hand-off per backward node, and its library calls cannot use PyTorch's
    OpenMP team (docs/design/library_path.md). With "caller" (the default) the thread
    that imports Kiln runs backward itself, as it does for CPU tensors
    (torch.autograd.set_multithreading_enabled(False) on that thread):
    training steps took 5-25 % less time on the reference models. "device"
    keeps PyTorch's device thread. The setting is the importing thread's
    only; other threads keep PyTorch's behaviour, and for CUDA tensors in the
    same process it also means backward on the calling thread.
    """
    choice = os.environ.get("KILN_AUTOGRAD_THREAD", "caller")
    if choice not in _AUTOGRAD_THREADS:
        warnings.warn(f"kiln configuration: KILN_AUTOGRAD_THREAD={choice!r} is not one of "
                      f"{', '.join(_AUTOGRAD_THREADS)}; using 'caller'", stacklevel=3)
        choice = "caller"
    if choice == "caller":
        torch.autograd.set_multithreading_enabled(False)
