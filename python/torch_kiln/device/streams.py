"""Streams and events of torch.kiln. They are torch.Stream and torch.Event of
the kiln device, so torch.accelerator and device-agnostic code accept them."""
import torch

from ._device import _lazy_init, _resolved_index


class Stream(torch.Stream):
    """An in-order queue of kiln work. ``Stream()`` takes one from the device's
    pool of 8 streams, round-robin, as torch.cuda.Stream does."""

    def __new__(cls, device=None, priority=0, **kwargs):
        _lazy_init()
        if "stream_id" in kwargs:
            return super().__new__(cls, priority=priority, **kwargs)
        return super().__new__(cls, torch.device("kiln", _resolved_index(device)),
                               priority=priority)


def Event(enable_timing=False, blocking=False, interprocess=False):
    """A torch.Event of the kiln device: a marker in a stream;
    ``enable_timing=True`` makes elapsed_time() work. (A plain torch.Event,
    since torch.Event's methods accept no subclass.)"""
    _lazy_init()
    return torch.Event(torch.device("kiln", _resolved_index(None)), enable_timing=enable_timing,
                       blocking=blocking, interprocess=interprocess)


def current_stream(device=None):
    return torch.accelerator.current_stream(torch.device("kiln", _resolved_index(device)))


def default_stream(device=None):
    index = _resolved_index(device)
    device_type = current_stream(index).device_type  # PrivateUse1's enum value
    return torch.Stream(stream_id=0, device_index=index, device_type=device_type)


def set_stream(stream):
    """Makes ``stream`` current on its device (and its device current)."""
    if stream is not None:
        torch.accelerator.set_stream(stream)


class stream:
    """Context manager that makes ``stream`` current and restores the previous one."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is None:
            return
        self.previous_device = torch.accelerator.current_device_index()
        self.previous_stream = current_stream(self.stream.device_index)
        torch.accelerator.set_stream(self.stream)

    def __exit__(self, *exception):
        if self.stream is None:
            return False
        torch.accelerator.set_stream(self.previous_stream)
        torch.accelerator.set_device_index(self.previous_device)
        return False
