#!/usr/bin/env python
"""Per-call cost of kiln's native ops, side by side with the same op on the CPU.

Each op is called from Python in a loop of N calls; the figure is the loop's
wall time / N, in microseconds, so it includes Python and dispatcher overhead
on both sides. For ops kiln queues on its stream (device-to-device copy, fill_,
zero_) the loop is followed by one torch.kiln.synchronize() inside the timed
region, so the figure covers the queued work too; the "issue us" column is the
same loop without waiting (what the caller sees before synchronizing). kiln and
CPU samples are interleaved round by round so background load hits both alike,
and the median sample is reported. The target is kiln / cpu <= 2x. Nothing here
is asserted: it only prints.
"""
import argparse
import json
import statistics
import sys
import time

import torch

from run_info import header, load

TARGET_RATIO = 2.0


def sync():
    torch.kiln.synchronize()


def make_cases(start_worker=True):
    """[(name, queued_on_kiln, {"kiln": fn, "cpu": fn})]; every tensor preallocated.

    kiln's stream starts its worker thread at the first queued op. By default one
    op is queued here so every op is measured with the worker running (as in any
    real program); start_worker=False leaves it unstarted, so with --ops limited
    to synchronous ops the stream never has a worker.
    """
    def tensors(device):
        t = {}
        t["small"] = torch.rand(256).to(device)            # 1 KiB of float32
        t["mat"] = torch.rand(64, 256).to(device)          # 64 KiB, for views
        t["src_1k"] = torch.rand(256).to(device)
        t["dst_1k"] = torch.empty(256, device=device)
        t["src_64k"] = torch.rand(16384).to(device)
        t["dst_64k"] = torch.empty(16384, device=device)
        t["one"] = torch.ones(1).to(device)
        return t

    k = tensors("kiln")
    c = tensors("cpu")
    host_1k = torch.rand(256)  # pageable host source of the H2D copy
    if start_worker:
        k["small"].fill_(0.0)  # queued: starts the stream's worker thread
    sync()

    def per_device(make):
        return {"kiln": make(k, "kiln"), "cpu": make(c, "cpu")}

    return [
        ("torch.empty(256)", False,
         per_device(lambda t, d: (lambda: torch.empty(256, device=d)))),
        ("x.view(-1)", False, per_device(lambda t, d: (lambda: t["mat"].view(-1)))),
        ("x.view(128, 128)", False, per_device(lambda t, d: (lambda: t["mat"].view(128, 128)))),
        ("x.t()", False, per_device(lambda t, d: (lambda: t["mat"].t()))),
        ("x.as_strided((256,64),(1,256))", False,
         per_device(lambda t, d: (lambda: t["mat"].as_strided((256, 64), (1, 256))))),
        ("copy_ dev->dev 1 KiB", True,
         per_device(lambda t, d: (lambda: t["dst_1k"].copy_(t["src_1k"])))),
        ("copy_ dev->dev 64 KiB", True,
         per_device(lambda t, d: (lambda: t["dst_64k"].copy_(t["src_64k"])))),
        ("copy_ host->dev 1 KiB (pageable)", False,
         per_device(lambda t, d: (lambda: t["dst_1k"].copy_(host_1k)))),
        ("x.fill_(1.0) 1 KiB", True, per_device(lambda t, d: (lambda: t["small"].fill_(1.0)))),
        ("x.zero_() 1 KiB", True, per_device(lambda t, d: (lambda: t["small"].zero_()))),
        (".item() 1 element", False, per_device(lambda t, d: (lambda: t["one"].item()))),
    ]


def time_loop(fn, calls, wait):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    if wait:
        sync()
    return (time.perf_counter() - start) / calls


def measure(case, args):
    name, queued, fns = case
    kiln_fn, cpu_fn = fns["kiln"], fns["cpu"]
    for _ in range(args.warmup):
        time_loop(kiln_fn, 100, queued)
        time_loop(cpu_fn, 100, False)
    probe = min(time_loop(kiln_fn, 200, queued) for _ in range(3))
    calls = max(50, int(args.sample_ms / 1000.0 / max(probe, 1e-9)))
    kiln_s, cpu_s, issue_s = [], [], []
    for round_index in range(args.samples):
        order = [0, 1] if round_index % 2 == 0 else [1, 0]
        for which in order:
            if which == 0:
                kiln_s.append(time_loop(kiln_fn, calls, queued))
            else:
                cpu_s.append(time_loop(cpu_fn, calls, False))
        if queued:
            issue_s.append(time_loop(kiln_fn, calls, False))
            sync()
    kiln_us = statistics.median(kiln_s) * 1e6
    cpu_us = statistics.median(cpu_s) * 1e6
    return {
        "op": name,
        "queued_on_kiln": queued,
        "kiln_us": kiln_us,
        "kiln_min_us": min(kiln_s) * 1e6,
        "kiln_max_us": max(kiln_s) * 1e6,
        "cpu_us": cpu_us,
        "cpu_min_us": min(cpu_s) * 1e6,
        "cpu_max_us": max(cpu_s) * 1e6,
        "ratio": kiln_us / cpu_us,
        "kiln_issue_us": statistics.median(issue_s) * 1e6 if issue_s else None,
        "calls_per_sample": calls,
        "samples": args.samples,
    }


def measure_synchronize(args):
    """Cost of torch.kiln.synchronize() on an idle stream (context for the queued ops)."""
    sync()
    samples = []
    for _ in range(args.samples):
        start = time.perf_counter()
        for _ in range(1000):
            sync()
        samples.append((time.perf_counter() - start) / 1000)
    return statistics.median(samples) * 1e6


def print_table(rows, sync_us):
    width = max(len(r["op"]) for r in rows)
    print()
    print(f"{'op':<{width}}  {'kiln us':>8} {'cpu us':>8} {'kiln/cpu':>9} "
          f"{'kiln min..max':>15} {'issue us':>9} {'calls':>7}")
    for r in rows:
        issue = f"{r['kiln_issue_us']:9.2f}" if r["kiln_issue_us"] is not None else f"{'-':>9}"
        spread = f"{r['kiln_min_us']:.2f}..{r['kiln_max_us']:.2f}"
        mark = "  > target" if r["ratio"] > TARGET_RATIO else ""
        print(f"{r['op']:<{width}}  {r['kiln_us']:8.2f} {r['cpu_us']:8.2f} {r['ratio']:8.2f}x "
              f"{spread:>15} {issue} {r['calls_per_sample']:>7}{mark}")
    print()
    print(f"torch.kiln.synchronize() on an idle stream: {sync_us:.2f} us")
    print(f"kiln/cpu = median kiln us / median cpu us; target <= {TARGET_RATIO}x. "
          "issue us = queued ops without waiting for the stream.")


def main(argv=None):
    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=9, help="timed samples per op and device")
    parser.add_argument("--warmup", type=int, default=3, help="untimed loops of 100 calls first")
    parser.add_argument("--sample-ms", type=float, default=40.0,
                        help="target duration of one timed sample (a loop of calls)")
    parser.add_argument("--ops", help="comma-separated substrings; run only matching ops")
    parser.add_argument("--no-worker-start", action="store_true",
                        help="queue nothing before measuring; combined with --ops naming only "
                             "synchronous ops (views, empty, host->dev copy, item) the stream's "
                             "worker thread never starts")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv[1:])

    lines = header(argv)
    print("\n".join(lines))
    started = time.perf_counter()
    cases = make_cases(start_worker=not args.no_worker_start)
    if args.ops:
        wanted = [w.strip() for w in args.ops.split(",") if w.strip()]
        cases = [c for c in cases if any(w in c[0] for w in wanted)]
    rows = [measure(case, args) for case in cases]
    sync_us = measure_synchronize(args)
    print_table(rows, sync_us)
    print(f"elapsed : {time.perf_counter() - started:.1f} s   load at end: {load()}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"header": lines, "args": vars(args), "results": rows,
                       "synchronize_idle_us": sync_us}, out, indent=2)


if __name__ == "__main__":
    main()
