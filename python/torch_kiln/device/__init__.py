"""``torch.kiln``: the kiln device module, mirroring ``torch.cuda``.

Devices are counted from ``KILN_NUM_DEVICES``; the runtime starts lazily on
first use. Streams and events are ``torch.Stream``/``torch.Event`` of the
kiln device.
"""
import contextlib

import torch

from .. import _C
from .memory import (
    empty_cache,
    empty_host_cache,
    host_memory_stats,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
from .random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from .streams import Event, Stream, current_stream, default_stream, set_stream, stream
from ._device import _device_index, _lazy_init

__all__ = [
    "Event", "Stream", "current_device", "current_stream", "default_stream", "device",
    "device_count", "device_of", "empty_cache", "empty_host_cache", "get_amp_supported_dtype", "get_device_name",
    "get_device_properties", "get_rng_state", "get_rng_state_all", "host_memory_stats", "init", "initial_seed",
    "is_available", "is_bf16_supported", "is_initialized", "manual_seed", "manual_seed_all",
    "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
    "memory_reserved", "memory_stats", "memory_summary", "reset_accumulated_memory_stats",
    "reset_peak_memory_stats", "seed", "seed_all", "set_device", "set_rng_state",
    "set_rng_state_all", "set_stream", "stream", "synchronize",
]


def is_available():
    """True when at least one kiln device exists and this process may use it."""
    return _C._device_count() > 0 and not _C._is_in_bad_fork()


def device_count():
    """Number of kiln devices (``KILN_NUM_DEVICES``, default 1)."""
    return _C._device_count()


def is_initialized():
    return _C._is_initialized() and not _C._is_in_bad_fork()


def init():
    """Starts the runtime now instead of on first use."""
    _lazy_init()


def _is_in_bad_fork():
    return _C._is_in_bad_fork()


def current_device():
    _lazy_init()
    return _C._get_device()


def set_device(device):
    """Sets the current kiln device (an index, ``"kiln:N"`` or a torch.device)."""
    index = _device_index(device)
    if index >= 0:
        _lazy_init()
        _C._set_device(index)


class device:
    """Context manager that makes ``device`` current and restores the previous one."""

    def __init__(self, device):
        self.index = _device_index(device, optional=True)
        self.previous = -1

    def __enter__(self):
        _lazy_init()
        self.previous = _C._exchange_device(self.index)

    def __exit__(self, *exception):
        _C._set_device(self.previous)
        return False


class device_of(device):
    """Makes the device of ``tensor`` current; a no-op for tensors not on kiln."""

    def __init__(self, tensor):
        super().__init__(tensor.get_device() if tensor.device.type == "kiln" else -1)


def synchronize(device=None):
    """Waits for all work queued on every stream of ``device``; raises the
    first error that queued work hit."""
    _lazy_init()
    _C._synchronize(_device_index(device, optional=True))


def get_device_properties(device=None):
    """Name, total_memory, multi_processor_count (cores), major, minor."""
    _lazy_init()
    properties = _C._get_device_properties(_device_index(device, optional=True))
    return _DeviceProperties(**properties)


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    properties = get_device_properties(device)
    return properties.major, properties.minor


def get_amp_supported_dtype():
    """dtypes autocast may use on kiln."""
    return [torch.float16, torch.bfloat16, torch.float32]


def is_bf16_supported(including_emulation=True):
    return True


class _DeviceProperties:
    def __init__(self, name, total_memory, multi_processor_count, major, minor):
        self.name = name
        self.total_memory = total_memory
        self.multi_processor_count = multi_processor_count
        self.major = major
        self.minor = minor

    def __repr__(self):
        return (
            f"_KilnDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1024 * 1024)}MB, "
            f"multi_processor_count={self.multi_processor_count})"
        )
