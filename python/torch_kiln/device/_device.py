"""Device-index parsing and lazy initialization shared by torch.kiln's parts."""
import torch

from .. import _C


def _lazy_init():
    if _C._is_in_bad_fork():
        raise RuntimeError(
            "Cannot re-initialize kiln in forked subprocess. To use kiln with "
            "multiprocessing, you must use the 'spawn' start method"
        )
    _C._init()


def _device_index(device, optional=False):
    """The index of ``device`` (int, str, torch.device or None); -1 for the
    current device when ``optional`` and ``device`` is None."""
    if device is None:
        if optional:
            return -1
        raise ValueError("expected a kiln device, got None")
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "kiln":
            raise ValueError(f"expected a kiln device, got {device}")
        return -1 if device.index is None else device.index
    raise TypeError(f"expected a kiln device, int or str, got {type(device).__name__}")


def _resolved_index(device):
    """Like _device_index, with None meaning the current device."""
    index = _device_index(device, optional=True)
    if index < 0:
        _lazy_init()
        index = _C._get_device()
    return index
