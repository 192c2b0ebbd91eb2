"""The `kiln` backend of torch.distributed (docs/distributed.md).

    dist.init_process_group("kiln")                 # kiln tensors
    dist.init_process_group("cpu:gloo,kiln:kiln")   # CPU tensors too
    dist.init_process_group("kiln", device_id=torch.device("kiln", rank))

The backend is C++ (csrc/kiln/distributed): a c10d::Backend whose transport
is a Gloo backend of the same group, given zero-copy CPU aliases of device
memory. This module builds that Gloo backend for each group and registers
"kiln" with torch.distributed, for the kiln device.
"""
import datetime

import torch
import torch.distributed as dist

from . import _C

BACKEND_NAME = "kiln"
# The transport's keys live under their own prefix in the group's store.
_TRANSPORT_STORE_PREFIX = "kiln-transport/"


def _create_backend(store, group_rank, group_size, timeout):
    """torch.distributed's creator for "kiln": called once per process group
    (the default group, and each new_group) with its store, rank, size and
    timeout."""
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    transport = dist.ProcessGroupGloo(dist.PrefixStore(_TRANSPORT_STORE_PREFIX, store),
                                      group_rank, group_size, timeout)
    return _C._KilnBackend(group_rank, group_size, timeout, transport)


def register():
    """Registers "kiln" with torch.distributed for the kiln device (once)."""
    if not dist.is_available():
        return
    if BACKEND_NAME in dist.Backend.backend_list:
        return
    _C._register_distributed_types()
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, devices=["kiln"])


__all__ = ["BACKEND_NAME", "register"]
