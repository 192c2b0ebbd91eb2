#!/usr/bin/env python
"""Foreach ops on kiln (compiled/foreach_ops.h) beside the same work op by op
and beside the CPU, in one run.

The tensors are the transformer's parameters (torch_kiln.models), so the
lists are what its AdamW step and clip_grad_norm_ hand the foreach ops. Each
call is timed with the device idle after it (synchronize), median of --calls,
the variants taking turns in --rounds rounds:

- cpu: the CPU, with foreach (ATen's portable kernel, op by op);
- kiln-loop: kiln, one torch op per tensor (what the portable kernel did on
  kiln before foreach ops replayed one launch);
- kiln-foreach: kiln, the foreach op.

Then a whole optimizer step (AdamW with clip_grad_norm_, gradients already
set): the CPU with foreach=False (its default), kiln with foreach=False and
kiln with foreach=True (kiln's default, as CUDA's). Nothing is asserted.

    python bench/bench_foreach.py [--calls 300] [--rounds 5] [--json out.json]
"""
import argparse
import json
import statistics
import sys
import time

import torch

from run_info import header

import torch_kiln  # noqa: F401 - registers the kiln device
from torch_kiln.models import MODELS


def synchronize(device):
    if device == "kiln":
        torch.kiln.synchronize()


def timed(call, device, calls):
    """Microseconds of each call, each ending with the device idle."""
    call()
    synchronize(device)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        synchronize(device)
        times.append((time.perf_counter() - start) * 1e6)
    return times


def side_by_side(variants, calls, rounds):
    """{name: median microseconds}; `variants` maps name -> (call, device)."""
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, (call, device) in variants.items():
            times[name] += timed(call, device, calls)
    return {name: statistics.median(values) for name, values in times.items()}


def parameters_on(device):
    torch.manual_seed(0)
    return [parameter.detach().to(device) for parameter in MODELS["transformer"].make_model().parameters()]


def op_cases(cpu, kiln):
    """(name, cpu call, kiln loop call, kiln foreach call)."""
    cpu_other, kiln_other = [t.abs() + 1 for t in cpu], [t.abs() + 1 for t in kiln]
    return [
        ("_foreach_mul_(list, 0.99)", lambda: torch._foreach_mul_(cpu, 0.99),
         lambda: [t.mul_(0.99) for t in kiln], lambda: torch._foreach_mul_(kiln, 0.99)),
        ("_foreach_add_(list, list, alpha)", lambda: torch._foreach_add_(cpu, cpu_other, alpha=1e-3),
         lambda: [t.add_(o, alpha=1e-3) for t, o in zip(kiln, kiln_other)],
         lambda: torch._foreach_add_(kiln, kiln_other, alpha=1e-3)),
        ("_foreach_addcdiv_(list, list, list, scalars)",
         lambda: torch._foreach_addcdiv_(cpu, cpu_other, cpu_other, [1e-3] * len(cpu)),
         lambda: [t.addcdiv_(o, o, value=1e-3) for t, o in zip(kiln, kiln_other)],
         lambda: torch._foreach_addcdiv_(kiln, kiln_other, kiln_other, [1e-3] * len(kiln))),
        ("_foreach_sqrt(list)", lambda: torch._foreach_sqrt(cpu_other),
         lambda: [t.sqrt() for t in kiln_other], lambda: torch._foreach_sqrt(kiln_other)),
        ("_foreach_norm(list)", lambda: torch._foreach_norm(cpu),
         lambda: [torch.linalg.vector_norm(t) for t in kiln], lambda: torch._foreach_norm(kiln)),
    ]


def optimizer_step(device, foreach):
    """One AdamW step with clip_grad_norm_ over the transformer's parameters,
    gradients fixed."""
    parameters = [torch.nn.Parameter(t) for t in parameters_on(device)]
    generator = torch.Generator().manual_seed(1)
    for parameter in parameters:
        parameter.grad = torch.randn(parameter.shape, generator=generator).to(device)
    optimizer = torch.optim.AdamW(parameters, lr=1e-4, weight_decay=0.01, foreach=foreach)

    def step():
        torch.nn.utils.clip_grad_norm_(parameters, 1.0, foreach=foreach)
        optimizer.step()
    return step


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="write the figures here as JSON")
    arguments = parser.parse_args(argv)
    lines = header(sys.argv)
    print("\n".join(lines))
    cpu, kiln = parameters_on("cpu"), parameters_on("kiln")
    print(f"\n{len(cpu)} tensors ({sum(t.numel() for t in cpu)} elements, float32): the transformer's parameters")
    print(f"us per call (median of {arguments.calls} x {arguments.rounds}, device idle after each)")
    print(f"{'op':46} {'cpu':>8} {'kiln-loop':>10} {'kiln-foreach':>13} {'loop/foreach':>13}")
    # Medians in microseconds, by variant ("cpu", "kiln-loop", "kiln-foreach").
    results = {"tensors": len(cpu), "elements": sum(t.numel() for t in cpu), "ops": []}
    for name, cpu_call, loop_call, foreach_call in op_cases(cpu, kiln):
        medians = side_by_side({"cpu": (cpu_call, "cpu"), "kiln-loop": (loop_call, "kiln"),
                                "kiln-foreach": (foreach_call, "kiln")}, arguments.calls, arguments.rounds)
        results["ops"].append({"op": name, "us": medians})
        print(f"{name:46} {medians['cpu']:8.1f} {medians['kiln-loop']:10.1f} {medians['kiln-foreach']:13.1f} "
              f"{medians['kiln-loop'] / medians['kiln-foreach']:12.2f}x")
    medians = side_by_side({"cpu, foreach=False": (optimizer_step("cpu", False), "cpu"),
                            "kiln, foreach=False": (optimizer_step("kiln", False), "kiln"),
                            "kiln, foreach=True": (optimizer_step("kiln", True), "kiln")},
                           max(arguments.calls // 3, 1), arguments.rounds)
    print("\nclip_grad_norm_ + AdamW step (us, median)")
    for name, value in medians.items():
        print(f"  {name:22} {value:8.1f}")
    results["optimizer_step_us"] = medians
    if arguments.json:
        with open(arguments.json, "w") as output:
            json.dump({"header": lines, "args": vars(arguments), "results": results}, output, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
