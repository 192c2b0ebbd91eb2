"""The `kiln` backend of torch.distributed (docs/design/distributed.md).

    dist.init_process_group("kiln")                 # kiln tensors
    dist.init_process_group("cpu:gloo,kiln:kiln")   # CPU tensors too
    dist.init_process_group("kiln", device_id=torch.device("kiln", rank))

The backend is C++ (csrc/kiln/distributed): a c10d::Backend whose transport
is a Gloo backend of the same group, given zero-copy CPU aliases of device
memory. When all the group's ranks run on this host, all_reduce,
all_gather_into_tensor, reduce_scatter_tensor, broadcast, barrier and
all_to_all_single go through a shared-memory segment instead. This module builds the Gloo backend and the
segment for each group and registers "kiln" with torch.distributed, for the
kiln device.
"""
import datetime
import os
import socket
import uuid
import warnings

import torch
import torch.distributed as dist

from . import _C

BACKEND_NAME = "kiln"
# The transport's keys live under their own prefix in the group's store.
_TRANSPORT_STORE_PREFIX = "kiln-transport/"
_SHARED_MEMORY_STORE_PREFIX = "kiln-shared-memory/"


def _host_identity():
    """What processes that can share memory have in common: the host (name
    and boot) and the /dev/shm they see (containers may each have their own)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as file:
            boot = file.read().strip()
        shm = os.stat("/dev/shm")
    except OSError:
        return None
    return f"{socket.gethostname()}|{boot}|{shm.st_dev}:{shm.st_ino}"


def _shared_memory_group(store, group_rank, group_size):
    """The group's shared-memory segment (csrc/kiln/runtime/shared_memory_group.h)
    when all its ranks run on this host, else None (Gloo carries every
    collective). Rank 0 creates the segment and publishes its name in the group's
    store; once every rank has opened it (or failed to), rank 0 removes the
    name, so the memory goes with the last process that maps it. Every rank
    reads every rank's outcome, so all take the same path."""
    if group_size < 2 or not _C._distributed_shared_memory():
        return None
    store = dist.PrefixStore(_SHARED_MEMORY_STORE_PREFIX, store)
    identity = _host_identity() or f"unknown|{uuid.uuid4().hex}"
    store.set(f"host/{group_rank}", identity)
    if any(store.get(f"host/{peer}").decode() != identity for peer in range(group_size)):
        return None
    group, problem = None, None
    if group_rank == 0:
        name = f"/kiln-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            group = _C._SharedMemoryGroup.create(name, group_size)
        except RuntimeError as error:
            name, problem = "", error
        store.set("name", name)
    else:
        name = store.get("name").decode()
        if name:
            try:
                group = _C._SharedMemoryGroup.open(name, group_rank, group_size)
            except RuntimeError as error:
                problem = error
    store.set(f"opened/{group_rank}", "1" if group is not None else "0")
    opened = [store.get(f"opened/{peer}") == b"1" for peer in range(group_size)]
    if group_rank == 0 and name:
        _C._SharedMemoryGroup.unlink(name)
    if problem is not None:
        warnings.warn(f"kiln: this process group's collectives go through Gloo, not shared memory: {problem}")
    return group if all(opened) else None


def _create_backend(store, group_rank, group_size, timeout):
    """torch.distributed's creator for "kiln": called once per process group
    (the default group, and each new_group) with its store, rank, size and
    timeout."""
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    transport = dist.ProcessGroupGloo(dist.PrefixStore(_TRANSPORT_STORE_PREFIX, store),
                                      group_rank, group_size, timeout)
    shared_memory = _shared_memory_group(store, group_rank, group_size)
    return _C._KilnBackend(group_rank, group_size, timeout, transport, shared_memory)


def register():
    """Registers "kiln" with torch.distributed for the kiln device (once)."""
    if not dist.is_available():
        return
    if BACKEND_NAME in dist.Backend.backend_list:
        return
    _C._register_distributed_types()
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, devices=["kiln"])


__all__ = ["BACKEND_NAME", "register"]
