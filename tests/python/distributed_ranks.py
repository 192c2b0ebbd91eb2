"""Runs a function on every rank of a torch.distributed group, each rank in
its own process (multiprocessing spawn), for the distributed tests.

The ranks rendezvous through a file store. A rank that raises sends its
traceback back; run_ranks() fails with every rank's error. Rank functions
must be importable module-level functions.
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


def _rank_main(function, rank, world_size, store_path, backend, timeout_seconds, results, args):
    try:
        warnings.filterwarnings("ignore")
        import torch
        import torch.distributed as dist
        dist.init_process_group(backend, init_method=f"file://{store_path}", rank=rank,
                                world_size=world_size,
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
              join_seconds=None):
    """Runs function(rank, world_size, *args) on `world_size` ranks; returns
    {rank: value}. Raises AssertionError with the errors of ranks that failed
    or did not finish."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    with tempfile.TemporaryDirectory() as folder:
        store_path = os.path.join(folder, "store")
        processes = [context.Process(target=_rank_main,
                                     args=(function, rank, world_size, store_path, backend,
                                           timeout_seconds, results, args))
                     for rank in range(world_size)]
        for process in processes:
            process.start()
        outcomes = {}
        deadline = START_SECONDS + (join_seconds or 2 * timeout_seconds)
        try:
            while len(outcomes) < world_size:
                rank, status, value = results.get(timeout=deadline)
                outcomes[rank] = (status, value)
        except queue.Empty:
            pass
        finally:
            for process in processes:
                process.join(timeout=10)
                if process.is_alive():
                    process.kill()
    failures = [f"rank {rank}: {value}" for rank, (status, value) in sorted(outcomes.items())
                if status != "ok"]
    missing = [rank for rank in range(world_size) if rank not in outcomes]
    if missing:
        failures.append(f"ranks {missing} did not finish")
    assert not failures, "\n".join(failures)
    return {rank: value for rank, (_, value) in outcomes.items()}
