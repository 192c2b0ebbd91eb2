#!/usr/bin/env python
"""all_reduce bandwidth of torch.distributed's `kiln` backend beside Gloo on
CPU tensors, in one run (issue 6).

Two ranks (processes) on this machine join one group with the backend string
"cpu:gloo,kiln:kiln": CPU tensors go to Gloo, kiln tensors to Kiln's backend
(whose transport is Gloo too, on host aliases of device memory). For each
size from 1 KiB to 256 MiB (float32), the two take turns call by call; each
timing is one synchronous all_reduce(SUM) of a tensor whose contents were just
written by an op on its device (finished before the clock starts). Reported: median microseconds and algorithm bandwidth
(bytes / time), and kiln / gloo bandwidth. Target: >= 0.9 at every size.

    python bench/bench_allreduce.py [--max-mib 256] [--rounds 5] [--json out.json]
"""
import argparse
import datetime
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

from run_info import header

# Both ranks must run the same number of collectives: the count per round
# depends only on the size (50 for small tensors, down to 3 for 256 MiB).
def iterations(size_bytes):
    return max(3, min(50, (64 * 1024 * 1024) // size_bytes))


def sizes(max_mib):
    size = 1024
    while size <= max_mib * 1024 * 1024:
        yield size
        size *= 4


def time_all_reduce(tensors, count):
    """Median seconds of one synchronous all_reduce per tensor; the tensors
    take turns call by call, so both see the same moments of a noisy machine."""
    import torch
    import torch.distributed as dist
    timings = {name: [] for name in tensors}
    for _ in range(count):
        for name, tensor in tensors.items():
            tensor.fill_(1.0)  # an op on the device before each collective, as in training
            if tensor.device.type == "kiln":
                torch.kiln.synchronize()  # time the collective, not the fill before it
            start = time.perf_counter()
            dist.all_reduce(tensor)
            if tensor.device.type == "kiln":
                torch.kiln.synchronize()
            timings[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in timings.items()}


def rank_main(rank, store_path, max_mib, rounds, results):
    import torch
    import torch.distributed as dist
    import torch_kiln  # noqa: F401
    dist.init_process_group("cpu:gloo,kiln:kiln", init_method=f"file://{store_path}", rank=rank,
                            world_size=2, timeout=datetime.timedelta(seconds=120))
    table = []
    for size in sizes(max_mib):
        elements = size // 4
        tensors = {"gloo": torch.empty(elements), "kiln": torch.empty(elements, device="kiln")}
        medians = {name: [] for name in tensors}
        for _ in range(rounds):
            for name, median in time_all_reduce(tensors, iterations(size)).items():
                medians[name].append(median)
        table.append({"bytes": size, **{name: statistics.median(values)
                                        for name, values in medians.items()}})
    dist.destroy_process_group()
    if rank == 0:
        results.put(table)


def label(size):
    return f"{size // (1024 * 1024)} MiB" if size >= 1024 * 1024 else f"{size // 1024} KiB"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-mib", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json")
    arguments = parser.parse_args()
    lines = header(sys.argv)
    print("\n".join(lines))
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    with tempfile.TemporaryDirectory() as folder:
        store = os.path.join(folder, "store")
        ranks = [context.Process(target=rank_main,
                                 args=(rank, store, arguments.max_mib, arguments.rounds, results))
                 for rank in range(2)]
        for process in ranks:
            process.start()
        table = results.get(timeout=3600)
        for process in ranks:
            process.join()
    print("\nall_reduce(SUM) of float32 on 2 ranks: median us and algorithm bandwidth (GB/s)")
    print(f"{'size':>8} {'gloo us':>10} {'kiln us':>10} {'gloo GB/s':>10} {'kiln GB/s':>10} "
          f"{'kiln/gloo':>10}")
    for row in table:
        ratio = row["gloo"] / row["kiln"]
        row["kiln_over_gloo"] = ratio
        print(f"{label(row['bytes']):>8} {row['gloo'] * 1e6:10.1f} {row['kiln'] * 1e6:10.1f} "
              f"{row['bytes'] / row['gloo'] / 1e9:10.3f} {row['bytes'] / row['kiln'] / 1e9:10.3f} "
              f"{ratio:9.2f}x")
    print(f"lowest kiln/gloo: {min(row['kiln_over_gloo'] for row in table):.2f}x (target >= 0.9)")
    if arguments.json:
        with open(arguments.json, "w") as file:
            json.dump({"header": lines, "args": vars(arguments), "results": table}, file, indent=1)


if __name__ == "__main__":
    main()
