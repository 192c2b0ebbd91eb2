#!/usr/bin/env python
"""DDP step time on 2 kiln ranks against one kiln process on half the batch:
the scaling efficiency of data parallelism over the `kiln` backend (issue 6).

Each rank runs the reference model's training step (torch_kiln.models) on
its half of the global batch under DistributedDataParallel; the single
process runs the same step, without DDP, on a half batch. Efficiency =
single step time / DDP step time (1.0: communication costs nothing). On a
machine with fewer cores than 2 ranks need, the ranks also compete for cores,
which the figure includes.

    python bench/bench_ddp.py [--models mlp,transformer] [--steps 30] [--json out.json]
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

WARM_UP_STEPS = 3


def half_batch(spec, generator, rank):
    """`rank`'s half of the next global batch (each field split on dim 0)."""
    batch = spec.make_batch(generator)
    return tuple(field.chunk(2)[rank] for field in batch)


def time_steps(spec, model, optimizer, device, rank, steps):
    import torch
    generator = torch.Generator().manual_seed(1)
    timings = []
    for step in range(WARM_UP_STEPS + steps):
        inputs, targets = (field.to(device) for field in half_batch(spec, generator, rank))
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = spec.loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        torch.kiln.synchronize()
        if step >= WARM_UP_STEPS:
            timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def ddp_rank(rank, store_path, model_name, steps, results):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch_kiln.models import MODELS
    dist.init_process_group("kiln", init_method=f"file://{store_path}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=120))
    spec = MODELS[model_name]
    torch.manual_seed(0)
    model = DistributedDataParallel(spec.make_model().to("kiln"))
    optimizer = spec.make_optimizer(list(model.parameters()))
    seconds = time_steps(spec, model, optimizer, "kiln", rank, steps)
    dist.destroy_process_group()
    results.put((rank, seconds))


def single_process(model_name, steps, results):
    import torch
    from torch_kiln.models import MODELS
    spec = MODELS[model_name]
    torch.manual_seed(0)
    model = spec.make_model().to("kiln")
    optimizer = spec.make_optimizer(list(model.parameters()))
    results.put(("single", time_steps(spec, model, optimizer, "kiln", 0, steps)))


def run(context, target, arguments, count):
    results = context.Queue()
    processes = [context.Process(target=target, args=(*arguments(index), results))
                 for index in range(count)]
    for process in processes:
        process.start()
    values = dict(results.get(timeout=600) for _ in processes)
    for process in processes:
        process.join()
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,cnn,transformer")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--json", help="write the figures here as JSON")
    arguments = parser.parse_args()
    lines = header(sys.argv)
    print("\n".join(lines))
    results = {}
    context = multiprocessing.get_context("spawn")
    print("\nmedian training step (ms): one process on half the batch, and DDP on 2 ranks")
    print(f"{'model':12} {'single ms':>10} {'ddp ms':>10} {'efficiency':>11}")
    for name in arguments.models.split(","):
        single = run(context, single_process, lambda _: (name, arguments.steps), 1)["single"]
        with tempfile.TemporaryDirectory() as folder:
            store = os.path.join(folder, "store")
            ranks = run(context, ddp_rank, lambda rank: (rank, store, name, arguments.steps), 2)
        ddp = max(ranks.values())  # a step ends when the slower rank's does
        print(f"{name:12} {single * 1e3:10.2f} {ddp * 1e3:10.2f} {single / ddp:10.2f}x")
        results[name] = {"single_step_s": single, "ddp_step_s": ddp,
                         "rank_step_s": [ranks[rank] for rank in sorted(ranks)], "efficiency": single / ddp}
    if arguments.json:
        with open(arguments.json, "w") as output:
            json.dump({"header": lines, "args": vars(arguments), "results": results}, output, indent=2)


if __name__ == "__main__":
    main()
