"""Makes ``kiln`` a PyTorch device: names PrivateUse1, registers ``torch.kiln``
and generates the ``.kiln()`` / ``.is_kiln`` methods. Runs once per process."""
import torch

_registered = False

_QUANTIZED_DTYPES = [torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4]


def register():
    global _registered
    if _registered:
        return
    from . import _C, device

    problems = _C._config_problems()
    if problems:
        import warnings

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
    _registered = True
