#!/usr/bin/env python
"""Host<->device copy bandwidth on kiln, side by side with a plain memcpy.

Every size is measured in one run against two CPU-to-CPU baselines over the
same number of bytes:

  memcpy (torch)   dst_cpu.copy_(src_cpu)             preallocated, contiguous
  memcpy (numpy)   np.copyto(dst_np, src_np)          preallocated, contiguous

and five kiln cases:

  H2D pageable     dst_kiln.copy_(src_cpu)            host waits for the stream
  D2H pageable     dst_cpu.copy_(src_kiln)            host waits for the stream
  H2D pinned       dst_kiln.copy_(src_pinned, non_blocking=True); torch.kiln.synchronize()
  D2H pinned       dst_pinned.copy_(src_kiln, non_blocking=True); torch.kiln.synchronize()
  D2D              dst_kiln.copy_(src_kiln); torch.kiln.synchronize() (queued, as clone() is)

Bandwidth is bytes copied (the tensor's nbytes, counted once) per second, in
GB/s (1e9 bytes). Each sample times a batch of calls (the batch is sized so a
sample lasts about --sample-ms); for the pinned cases the batch is queued and
followed by one synchronize, so the figure includes the hand-off to the stream
worker. The cases are interleaved round by round so background load hits all
of them alike, and the median sample is reported. Ratios are memcpy time / kiln
time against each baseline (= kiln bandwidth / memcpy bandwidth); the target is
>= 0.8x. memcpy (torch) is ATen's CPU copy kernel, which splits copies above
32768 elements across torch.get_num_threads() threads (see --threads), as
kiln splits its byte copies from 512 KiB on; np.copyto is one glibc memcpy on
one thread. Nothing here is asserted: it only prints.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch

from run_info import header, load

KIB = 1024
MIB = 1024 * KIB
DEFAULT_SIZES = [64 * KIB, 1 * MIB, 16 * MIB, 256 * MIB]
TARGET_RATIO = 0.8


def parse_size(text):
    text = text.strip().upper()
    for suffix, factor in (("KIB", KIB), ("MIB", MIB), ("GIB", 1024 * MIB), ("K", KIB), ("M", MIB)):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * factor)
    return int(text)


def format_size(nbytes):
    if nbytes >= MIB and nbytes % MIB == 0:
        return f"{nbytes // MIB} MiB"
    if nbytes >= KIB and nbytes % KIB == 0:
        return f"{nbytes // KIB} KiB"
    return f"{nbytes} B"


def sync():
    torch.kiln.synchronize()


def make_cases(nbytes):
    """Returns [(name, kind, fn)] with every buffer preallocated and touched."""
    numel = nbytes // 4
    src_cpu = torch.rand(numel, dtype=torch.float32)
    dst_cpu = torch.empty_like(src_cpu)
    src_np = src_cpu.numpy()
    dst_np = np.empty_like(src_np)
    dst_kiln = torch.empty(numel, dtype=torch.float32, device="kiln")
    src_kiln = src_cpu.to("kiln")
    dst_kiln_copy = torch.empty_like(src_kiln)
    src_pinned = src_cpu.pin_memory()
    dst_pinned = torch.empty(numel, dtype=torch.float32).pin_memory()
    # Touch every destination once so no first-touch page faults land in a sample.
    dst_cpu.copy_(src_cpu)
    dst_np[...] = 0
    dst_kiln.copy_(src_cpu)
    dst_kiln_copy.copy_(src_kiln)
    dst_pinned.copy_(src_cpu)
    sync()
    assert src_pinned.is_pinned() and dst_pinned.is_pinned()

    def memcpy_torch():
        dst_cpu.copy_(src_cpu)

    def memcpy_numpy():
        np.copyto(dst_np, src_np)

    def h2d_pageable():
        dst_kiln.copy_(src_cpu)

    def d2h_pageable():
        dst_cpu.copy_(src_kiln)

    def h2d_pinned():
        dst_kiln.copy_(src_pinned, non_blocking=True)

    def d2h_pinned():
        dst_pinned.copy_(src_kiln, non_blocking=True)

    def d2d():
        dst_kiln_copy.copy_(src_kiln)

    # kind "sync": each call is complete when it returns (sync() after the batch
    # is still called for the kiln ones, and is a no-op wait).
    # kind "async": the batch is queued, then one synchronize.
    return [
        ("memcpy (torch)", "cpu", memcpy_torch),
        ("memcpy (numpy)", "cpu", memcpy_numpy),
        ("H2D pageable", "kiln", h2d_pageable),
        ("D2H pageable", "kiln", d2h_pageable),
        ("H2D pinned nb", "kiln", h2d_pinned),
        ("D2H pinned nb", "kiln", d2h_pinned),
        ("D2D", "kiln", d2d),
    ]


def time_batch(fn, kind, batch):
    start = time.perf_counter()
    for _ in range(batch):
        fn()
    if kind == "kiln":
        sync()
    return (time.perf_counter() - start) / batch


def measure_size(nbytes, args):
    cases = make_cases(nbytes)
    for name, kind, fn in cases:
        for _ in range(args.warmup):
            time_batch(fn, kind, 1)
    # np.copyto (a single-threaded memcpy) is the steadiest probe; take the
    # fastest of several so one descheduled call does not shrink the batch.
    probe = min(time_batch(cases[1][2], "cpu", 1) for _ in range(5))
    batch = max(1, int(args.sample_ms / 1000.0 / max(probe, 1e-9)))
    # Fewer samples for the big sizes (one 256 MiB copy is tens of ms).
    samples = args.samples if nbytes <= 16 * MIB else max(5, args.samples // 3)
    times = {name: [] for name, _, _ in cases}
    for round_index in range(samples):
        shift = round_index % len(cases)
        for name, kind, fn in cases[shift:] + cases[:shift]:
            times[name].append(time_batch(fn, kind, batch))
    rows = []
    torch_memcpy = statistics.median(times[cases[0][0]])
    numpy_memcpy = statistics.median(times[cases[1][0]])
    for name, kind, _ in cases:
        samples_s = times[name]
        median = statistics.median(samples_s)
        rows.append({
            "size_bytes": nbytes,
            "case": name,
            "median_s": median,
            "min_s": min(samples_s),
            "max_s": max(samples_s),
            "gb_per_s": nbytes / median / 1e9,
            "ratio_vs_torch_memcpy": torch_memcpy / median,
            "ratio_vs_numpy_memcpy": numpy_memcpy / median,
            "batch": batch,
            "samples": len(samples_s),
        })
    del cases
    return rows


def print_table(rows):
    print()
    print(f"{'size':>8}  {'case':<15} {'GB/s':>8} {'x torch':>8} {'x numpy':>8} "
          f"{'median us':>11} {'min us':>10} {'max us':>10} {'batch':>6}")
    last_size = None
    for row in rows:
        if last_size is not None and row["size_bytes"] != last_size:
            print()
        last_size = row["size_bytes"]
        mark = ""
        if not row["case"].startswith("memcpy") and min(
                row["ratio_vs_torch_memcpy"], row["ratio_vs_numpy_memcpy"]) < TARGET_RATIO:
            mark = "  < target"
        print(f"{format_size(row['size_bytes']):>8}  {row['case']:<15} {row['gb_per_s']:8.2f} "
              f"{row['ratio_vs_torch_memcpy']:7.2f}x {row['ratio_vs_numpy_memcpy']:7.2f}x "
              f"{row['median_s'] * 1e6:11.1f} "
              f"{row['min_s'] * 1e6:10.1f} {row['max_s'] * 1e6:10.1f} {row['batch']:>6}{mark}")
    print()
    print("x torch / x numpy = median time of memcpy (torch) / memcpy (numpy) divided by the "
          "case's median time")
    print(f"target for kiln cases >= {TARGET_RATIO}x; '< target' marks a case below it "
          "against either baseline")


def main(argv=None):
    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(format_size(s).replace(" ", "") for s in DEFAULT_SIZES),
                        help="comma-separated byte sizes, e.g. 64KiB,1MiB,16MiB,256MiB")
    parser.add_argument("--samples", type=int, default=15,
                        help="timed samples per case (a third of this, at least 5, above 16 MiB)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls per case first")
    parser.add_argument("--sample-ms", type=float, default=20.0,
                        help="target duration of one timed sample (a batch of calls)")
    parser.add_argument("--threads", type=int,
                        help="torch.set_num_threads() first (default: leave PyTorch's choice)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv[1:])
    if args.threads:
        torch.set_num_threads(args.threads)
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]

    lines = header(argv, f"numpy: {np.__version__}")
    print("\n".join(lines))
    started = time.perf_counter()
    rows = []
    for nbytes in sizes:
        rows.extend(measure_size(nbytes, args))
    print_table(rows)
    print(f"elapsed : {time.perf_counter() - started:.1f} s   load at end: {load()}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"header": lines, "args": vars(args), "results": rows}, out, indent=2)


if __name__ == "__main__":
    main()
