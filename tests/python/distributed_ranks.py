"""Runs a function on every rank of a torch.distributed group, each rank in
its own process (multiprocessing spawn), for the distributed tests.

The ranks rendezvous through a file store. A rank that raises sends its
traceback back; run_ranks() fails with every rank's error. Rank functions
must be importable module-level functions, and return plain Python values
(a tensor sent back would share memory with a process that is exiting).
"""
import datetime
import multiprocessing
import os
import queue
import tempfile
import traceback
import warnings

# Spawned ranks import torch and torch_kiln anew: a few seconds each.
START_SECONDS = 120


def _rank_main(function, rank, world_size, store_path, backend, timeout_seconds, results, args,
               device_ids):
    try:
        warnings.filterwarnings("ignore")
        import torch
        import torch.distributed as dist
        device_id = torch.device("kiln", rank) if device_ids else None
        dist.init_process_group(backend, init_method=f"file://{store_path}", rank=rank,
                                world_size=world_size, device_id=device_id,
                                timeout=datetime.timedelta(seconds=timeout_seconds))
        try:
            value = function(rank, world_size, *args)
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
        results.put((rank, "ok", value))
    except BaseException:  # noqa: BLE001: reported to the parent
        results.put((rank, "error", traceback.format_exc()))


def run_ranks(function, world_size, *args, backend="kiln", timeout_seconds=60,
              join_seconds=None, device_ids=False, may_exit=(), environment=None):
    """Runs function(rank, world_size, *args) on `world_size` ranks; returns
    {rank: value}. Raises AssertionError with the errors of ranks that failed
    or did not finish, except the ranks in `may_exit` (which may end their
    process without reporting). With `device_ids`, rank r initializes with
    device_id=kiln:r and every rank sees world_size kiln devices.
    `environment`: variables the ranks start with."""
    context = multiprocessing.get_context("spawn")
    environment = dict(environment or {})
    if device_ids:
        environment["KILN_NUM_DEVICES"] = str(world_size)
    previous = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)  # inherited by the spawned ranks
    results = context.Queue()
    with tempfile.TemporaryDirectory() as folder:
        store_path = os.path.join(folder, "store")
        processes = [context.Process(target=_rank_main,
                                     args=(function, rank, world_size, store_path, backend,
                                           timeout_seconds, results, args, device_ids))
                     for rank in range(world_size)]
        for process in processes:
            process.start()
        outcomes = {}
        deadline = START_SECONDS + (join_seconds or 2 * timeout_seconds)
        expected = world_size - len(may_exit)
        try:
            while len(outcomes) < expected:
                rank, status, value = results.get(timeout=deadline)
                outcomes[rank] = (status, value)
        except queue.Empty:
            pass
        finally:
            for process in processes:
                process.join(timeout=10)
                if process.is_alive():
                    process.kill()
            for name, value in previous.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    failures = [f"rank {rank}: {value}" for rank, (status, value) in sorted(outcomes.items())
                if status != "ok"]
    missing = [rank for rank in range(world_size) if rank not in outcomes and rank not in may_exit]
    if missing:
        failures.append(f"ranks {missing} did not finish")
    assert not failures, "\n".join(failures)
    return {rank: value for rank, (_, value) in outcomes.items()}
