#!/usr/bin/env python
"""Training step time of the reference models (MLP, CNN, decoder-only
transformer) on kiln eager beside PyTorch's CPU eager, and the cold-start cost
of kiln's kernel compilation.

- step time: median seconds per training step over --steps steps of one
  model and optimizer, after two warm-up steps; each step ends with the device
  idle. Target: cpu / kiln >= 1.0.
- cold start: in a fresh process with an empty kernel cache (a temporary
  KILN_CACHE_DIR), the kernels compiled and the seconds of the first step;
  then the same with that cache warm on disk (a second fresh process).

    python bench/bench_training.py [--steps 20] [--models mlp,cnn,transformer]
        [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import torch

from run_info import header

import torch_kiln
from torch_kiln.models import MODELS, Training


def step_times(spec, device, steps):
    """Seconds per step for `steps` steps of one model and optimizer, after
    two warm-up steps (which also create the optimizer's state). Each step
    ends when the device is idle, so no work is left queued."""
    training = Training(spec, device)
    for _ in range(2):
        training.step()
    synchronize(device)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        training.step()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return times


def synchronize(device):
    if device == "kiln":
        torch.kiln.synchronize()


FIRST_STEP = """
import json, time, torch, torch_kiln
from torch_kiln.models import MODELS, train_steps
start = time.perf_counter()
train_steps(MODELS[{name!r}], {device!r}, steps=1)
if {device!r} == "kiln":
    torch.kiln.synchronize()
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, **torch_kiln.compiler_stats()}}))
"""


def first_step(name, cache_dir, device="kiln"):
    env = dict(os.environ, KILN_CACHE_DIR=cache_dir, KILN_FALLBACK="silent")
    code = textwrap.dedent(FIRST_STEP.format(name=name, device=device))
    result = subprocess.run([sys.executable, "-c", code],
                            env=env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--json", help="write the figures here as JSON")
    args = parser.parse_args()
    lines = header(sys.argv)
    print("\n".join(lines))
    names = args.models.split(",")
    figures = {}

    print(f"\nstep time (ms, median of {args.steps}; ratio = cpu / kiln, target >= 1.0)")
    print(f"{'model':<13}{'kiln':>9}{'cpu':>9}{'ratio':>8}{'fallback ops':>14}")
    for name in names:
        spec = MODELS[name]
        torch_kiln.clear_op_tracking()
        kiln = statistics.median(step_times(spec, "kiln", args.steps))
        fallbacks = len(torch_kiln.get_fallback_ops())
        cpu = statistics.median(step_times(spec, "cpu", args.steps))
        figures[name] = {"kiln_step_s": kiln, "cpu_step_s": cpu, "fallback_ops": fallbacks}
        print(f"{name:<13}{kiln * 1e3:>9.2f}{cpu * 1e3:>9.2f}{cpu / kiln:>8.2f}{fallbacks:>14}")

    print("\ncold start: first training step in a fresh process")
    print("(the CPU's first step in a fresh process is shown for scale: much of any first step")
    print(" is PyTorch's own lazy imports, e.g. torch._dynamo when the optimizer is made)")
    print(f"{'model':<13}{'kernels':>9}{'compile s':>11}{'first step s':>14}"
          f"{'warm: compiled':>16}{'disk hits':>11}{'first step s':>14}{'cpu first s':>13}")
    for name in names:
        with tempfile.TemporaryDirectory(prefix="kiln-bench-cache-") as cache:
            cold = first_step(name, cache)
            warm = first_step(name, cache)
            cpu = first_step(name, cache, device="cpu")
        figures[name].update(cold=cold, warm=warm, cpu_first_step_s=cpu["seconds"])
        print(f"{name:<13}{cold['kernels_compiled']:>9}{cold['compile_seconds']:>11.2f}"
              f"{cold['seconds']:>14.2f}{warm['kernels_compiled']:>16}{warm['disk_hits']:>11}"
              f"{warm['seconds']:>14.2f}{cpu['seconds']:>13.2f}")
    if args.json:
        with open(args.json, "w") as output:
            json.dump({"header": lines, "args": vars(args), "results": figures}, output, indent=2)


if __name__ == "__main__":
    main()
