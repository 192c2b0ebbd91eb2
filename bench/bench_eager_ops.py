#!/usr/bin/env python
"""Compiled eager ops on kiln beside PyTorch's CPU eager (and, with --inductor,
CPU Inductor), in one run.

- per-op cost: a tiny add (a [4, 5] + [5] broadcast) called in a loop from
  Python, after its kernel is cached; microseconds per call, synchronised at the
  end of the loop. Target: kiln <= 1.5x CPU eager.
- throughput: large pointwise ops and reductions (16M float32 elements);
  milliseconds per call and CPU/kiln speed ratio. Target: kiln >= 0.9x CPU eager.
- row ops: softmax, log_softmax, layer norm and cross entropy (forward and
  backward) at the reference models' sizes and at 8192x256, which Kiln runs as
  one row kernel each way where the rows suit one; microseconds per call.

kiln and CPU samples alternate round by round so background load hits both
alike; the median of the rounds is reported. Before each sample the other
side's idle threads get 50 ms to stop spinning, then a few warm-up calls bring
the cores back to speed; a throughput sample is 20 calls. Nothing is asserted.

    python bench/bench_eager_ops.py [--rounds 7] [--inductor] [--json out.json]
"""
import argparse
import json
import statistics
import sys
import time

import torch

from run_info import header


SETTLE_SECONDS = 0.05
WARM_UP_CALLS = 3


def sync(device):
    if device == "kiln":
        torch.kiln.synchronize()


def time_loop(fn, device, calls):
    # Let the other side's idle threads stop spinning first: OpenMP's workers
    # spin for a while after each CPU op, and on a small machine they would
    # take the cores from the kiln loop that follows (and kiln's from the CPU's).
    time.sleep(SETTLE_SECONDS)
    # Warm-up calls: after the pause the cores (and a VM's virtual CPUs) need
    # a few milliseconds of work before they run at full speed.
    for _ in range(WARM_UP_CALLS):
        fn()
    sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(device)
    return (time.perf_counter() - start) / calls


def per_op_cases():
    def make(device):
        a = torch.ones(4, 5, device=device)
        b = torch.ones(5, device=device)
        c = torch.ones(20, device=device)
        return {
            "add [4,5]+[5]": lambda: a + b,
            "mul_ [20] scalar": lambda: c.mul_(1.0),
            "sum [4,5] dim 1": lambda: a.sum(1),
        }
    return make("kiln"), make("cpu")


def throughput_cases():
    elements = 1 << 24

    def make(device):
        generator = torch.Generator().manual_seed(0)
        x = torch.rand(elements, generator=generator).to(device)
        y = torch.rand(elements, generator=generator).to(device)
        z = torch.rand(elements, generator=generator).to(device)
        matrix = x.view(4096, 4096)
        out = torch.empty_like(x)
        return {
            "add 16M": lambda: torch.add(x, y, out=out),
            "x*y+z 16M (3 ops)": lambda: x * y + z,
            "exp 16M": lambda: torch.exp(x, out=out),
            "sum 16M (all)": lambda: x.sum(),
            "sum rows 4096x4096": lambda: matrix.sum(1),
            "sum cols 4096x4096": lambda: matrix.sum(0),
            "amax rows 4096x4096": lambda: matrix.amax(1),
        }
    return make("kiln"), make("cpu")


def row_cases():
    def make(device):
        generator = torch.Generator().manual_seed(0)

        def tensor(*shape):
            return torch.randn(*shape, generator=generator).to(device)
        logits, targets = tensor(64, 10), torch.randint(0, 10, (64,), generator=generator).to(device)
        leaf = logits.clone().requires_grad_()
        tokens, large = tensor(128, 32), tensor(8192, 256)
        token_weight, token_bias, large_weight, large_bias = tensor(32), tensor(32), tensor(256), tensor(256)
        return {
            "log_softmax 64x10": lambda: torch.log_softmax(logits, 1),
            "cross_entropy 64x10": lambda: torch.nn.functional.cross_entropy(logits, targets),
            "cross_entropy+bwd 64x10": lambda: torch.nn.functional.cross_entropy(leaf, targets).backward(),
            "softmax 128x32": lambda: torch.softmax(tokens, 1),
            "layer_norm 128x32": lambda: torch.nn.functional.layer_norm(tokens, (32,), token_weight, token_bias),
            "softmax 8192x256": lambda: torch.softmax(large, 1),
            "layer_norm 8192x256": lambda: torch.nn.functional.layer_norm(large, (256,), large_weight, large_bias),
        }
    return make("kiln"), make("cpu")


def inductor_cases(cpu_cases):
    compiled = {}
    for name, fn in cpu_cases.items():
        compiled[name] = torch.compile(fn)
        compiled[name]()  # compile now, not in the timed loop
    return compiled


def measure(kiln_cases, cpu_cases, rounds, calls, extra=None):
    rows = []
    for name in kiln_cases:
        samples = {"kiln": [], "cpu": [], "inductor": []}
        for _ in range(rounds):
            samples["kiln"].append(time_loop(kiln_cases[name], "kiln", calls))
            samples["cpu"].append(time_loop(cpu_cases[name], "cpu", calls))
            if extra is not None:
                samples["inductor"].append(time_loop(extra[name], "cpu", calls))
        row = {"case": name}
        for key, values in samples.items():
            if values:
                row[key] = statistics.median(values)
        rows.append(row)
    return rows


def print_table(title, rows, unit, scale, target_text):
    print(f"\n{title} ({unit}; ratio = cpu / kiln, higher is better for kiln; {target_text})")
    has_inductor = any("inductor" in row for row in rows)
    heading = f"{'case':<26}{'kiln':>10}{'cpu':>10}{'ratio':>8}"
    if has_inductor:
        heading += f"{'inductor':>10}{'ind/kiln':>9}"
    print(heading)
    for row in rows:
        line = (f"{row['case']:<26}{row['kiln'] * scale:>10.2f}{row['cpu'] * scale:>10.2f}"
                f"{row['cpu'] / row['kiln']:>8.2f}")
        if "inductor" in row:
            line += f"{row['inductor'] * scale:>10.2f}{row['inductor'] / row['kiln']:>9.2f}"
        print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--inductor", action="store_true", help="also time CPU Inductor")
    parser.add_argument("--json", help="write the figures here as JSON")
    args = parser.parse_args()
    lines = header(sys.argv)
    print("\n".join(lines))

    kiln_small, cpu_small = per_op_cases()
    small = measure(kiln_small, cpu_small, args.rounds, calls=20000)
    print_table("per-op cost on a cache hit", small, "us per call", 1e6,
                "target: kiln time <= 1.5x cpu, i.e. ratio >= 0.67")

    kiln_large, cpu_large = throughput_cases()
    extra = inductor_cases(cpu_large) if args.inductor else None
    large = measure(kiln_large, cpu_large, args.rounds, calls=20, extra=extra)
    print_table("throughput", large, "ms per call", 1e3, "target: ratio >= 0.9")

    kiln_rows, cpu_rows = row_cases()
    rows = measure(kiln_rows, cpu_rows, args.rounds, calls=200)
    print_table("row ops", rows, "us per call", 1e6, "no target: row kernels' figures")

    if args.json:
        with open(args.json, "w") as output:
            json.dump({"header": lines, "args": vars(args),
                       "results": {"per_op": small, "throughput": large, "row_ops": rows}},
                      output, indent=2)


if __name__ == "__main__":
    main()
