#!/usr/bin/env python
"""Long runs: a suite model (bench/suite_models.py) trained for thousands of
steps on kiln must leave nothing behind, step after step.

Each mode runs in a process of its own:

  kiln_eager      model.to("kiln"), eager
  kiln_compiled   torch.compile(model, backend="kiln", dynamic=False)

A step is forward, loss, backward and AdamW's update on the suite's fixed
batch, and ends with torch.kiln.synchronize(). After the first step and every
--every steps (and after the last), the process collects garbage
(gc.collect()), hands memory glibc's malloc holds free back to the system
(malloc_trim, so that resident memory counts what is in use, not what malloc
keeps cached), and samples:

  device_allocated   torch.kiln.memory_allocated(): bytes of live kiln tensors
  device_reserved    torch.kiln.memory_reserved(): bytes the caching allocator holds
  rss                the process's resident memory (/proc/self/statm)
  live_objects       len(gc.get_objects()): Python objects the collector tracks

The drift is measured over the samples from the warm-up's end (--warmup
steps; by default 10 % of --steps and at least 100, or half of a run shorter
than 200 steps) to the last: the change
between the first and the last of them, their range (max - min) and a
least-squares slope per 1000 steps. A mode passes when

  device memory (allocated and reserved) is exactly flat: range 0;
  RSS changes by at most RSS_TOLERANCE_MIB, and its fitted line rises or
      falls by at most that much over the measured window;
  live objects change by at most OBJECT_TOLERANCE, and their fitted line
      by at most that much over the window.

    python bench/bench_long_run.py [--model resnet18] [--steps 2000] [--every 50]
        [--warmup N] [--modes kiln_eager,kiln_compiled] [--json bench/results/long_run.json]

Exits 1 when a mode fails or does not run. Step times are printed too, but
they are not what this measures (on a shared machine they are noisy).
"""
import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
MODES = ("kiln_eager", "kiln_compiled")
METRICS = ("device_allocated", "device_reserved", "rss", "live_objects")
RSS_TOLERANCE_MIB = 8.0
OBJECT_TOLERANCE = 20
MIB = 1024 * 1024


# ------------------------------------------------------------ measuring, in the mode's process

def resident_bytes():
    """The process's resident memory: /proc/self/statm's second field, in pages."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def release_freed_host_memory():
    """glibc's malloc_trim(0): memory malloc holds free goes back to the system."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: RSS then includes malloc's free lists
        pass


def sample(step, start):
    """One sample of the four metrics; the device is idle (the step synchronized)."""
    import torch
    gc.collect()
    release_freed_host_memory()
    return {"step": step, "seconds": time.perf_counter() - start,
            "device_allocated": torch.kiln.memory_allocated(), "device_reserved": torch.kiln.memory_reserved(),
            "rss": resident_bytes(), "live_objects": len(gc.get_objects())}


def train_and_sample(model_name, mode, steps, every, after_step=None):
    """Trains `model_name` in `mode` for `steps` steps; returns the samples
    (after the first step, every `every` steps, and after the last).
    `after_step(step)`, if given, runs after each step (a test injects a leak)."""
    import torch
    import torch_kiln  # noqa: F401
    sys.path.insert(0, BENCH)
    import suite_models
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
    workload = suite_models.build(model_name)
    model = workload.model.to("kiln").train()
    inputs = {key: value.to("kiln") if hasattr(value, "to") else value for key, value in workload.inputs.items()}
    runner = torch.compile(model, backend="kiln", dynamic=False) if mode == "kiln_compiled" else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    samples = []
    start = time.perf_counter()
    for step in range(1, steps + 1):
        optimizer.zero_grad(set_to_none=True)
        loss = workload.loss(runner(**inputs), inputs)
        loss.backward()
        optimizer.step()
        torch.kiln.synchronize()
        del loss
        if after_step is not None:
            after_step(step)
        if step == 1 or step % every == 0 or step == steps:
            samples.append(sample(step, start))
    return samples


# ------------------------------------------------------------ judging

def slope_per_1000_steps(points):
    """Least-squares slope of (step, value) points, per 1000 steps."""
    if len(points) < 2:
        return 0.0
    mean_step = sum(step for step, _ in points) / len(points)
    mean_value = sum(value for _, value in points) / len(points)
    spread = sum((step - mean_step) ** 2 for step, _ in points)
    if spread == 0:
        return 0.0
    return 1000 * sum((step - mean_step) * (value - mean_value) for step, value in points) / spread


def drift(samples, metric, warmup):
    """The metric's drift over the samples from step `warmup` on."""
    kept = [(entry["step"], entry[metric]) for entry in samples if entry["step"] >= warmup]
    if not kept:
        raise ValueError(f"no sample at or after step {warmup}")
    values = [value for _, value in kept]
    return {"from_step": kept[0][0], "to_step": kept[-1][0], "first": values[0], "last": values[-1],
            "change": values[-1] - values[0], "range": max(values) - min(values),
            "slope_per_1000_steps": slope_per_1000_steps(kept)}


def judge(samples, warmup, rss_tolerance_mib=RSS_TOLERANCE_MIB, object_tolerance=OBJECT_TOLERANCE):
    """{metric: drift with "passed" and "tolerance"} and whether all passed."""
    verdicts = {}
    for metric in METRICS:
        entry = drift(samples, metric, warmup)
        window = (entry["to_step"] - entry["from_step"]) / 1000
        fitted = abs(entry["slope_per_1000_steps"]) * window  # the fitted line's rise over the window
        if metric.startswith("device"):
            entry["tolerance"] = "range 0 (exactly flat)"
            entry["passed"] = entry["range"] == 0
        elif metric == "rss":
            limit = rss_tolerance_mib * MIB
            entry["tolerance"] = f"|change| and fitted drift <= {rss_tolerance_mib:g} MiB"
            entry["passed"] = abs(entry["change"]) <= limit and fitted <= limit
        else:
            entry["tolerance"] = f"|change| and fitted drift <= {object_tolerance} objects"
            entry["passed"] = abs(entry["change"]) <= object_tolerance and fitted <= object_tolerance
        verdicts[metric] = entry
    return verdicts, all(entry["passed"] for entry in verdicts.values())


def default_warmup(steps):
    return max(100, steps // 10) if steps >= 200 else steps // 2


# ------------------------------------------------------------ one process per mode

def run_mode(args, mode, directory):
    """Runs one mode in a process of its own; returns its record."""
    record_path = os.path.join(directory, f"{mode}.json")
    command = [sys.executable, os.path.abspath(__file__), "--child-mode", mode, "--child-record", record_path,
               "--model", args.model, "--steps", str(args.steps), "--every", str(args.every)]
    env = dict(os.environ, KILN_FALLBACK="silent")
    try:
        completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "error": f"timed out after {args.timeout} s"}
    if completed.returncode != 0 or not os.path.exists(record_path):
        tail = [line for line in (completed.stderr or "").strip().splitlines() if line.strip()][-1:]
        return {"status": "failed", "error": f"process exited with {completed.returncode}: "
                                             f"{tail[0] if tail else ''}"[:400]}
    with open(record_path) as source:
        return {"status": "ran", "samples": json.load(source)}


def figure(metric, value):
    if metric.startswith("device") or metric == "rss":
        return f"{value / MIB:+.2f} MiB" if value else "0"
    return f"{value:+.1f}" if isinstance(value, float) else f"{value:+d}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18", help="a model of bench/suite_models.py")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--every", type=int, default=50, help="steps between samples")
    parser.add_argument("--warmup", type=int, help="steps before the drift is measured "
                                                    "(default: 10 %% of --steps, at least 100; half below 200)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per mode's process")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--child-mode", help=argparse.SUPPRESS)
    parser.add_argument("--child-record", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_mode:
        samples = train_and_sample(args.model, args.child_mode, args.steps, args.every)
        with open(args.child_record, "w") as output:
            json.dump(samples, output)
        return 0

    sys.path.insert(0, BENCH)
    import torch
    import torch_kiln  # noqa: F401
    from run_info import header
    warmup = args.warmup if args.warmup is not None else default_warmup(args.steps)
    lines = header(sys.argv if argv is None else [os.path.relpath(__file__)] + list(argv))
    print("\n".join(lines))
    print(f"model {args.model}, {args.steps} steps, a sample every {args.every}, drift measured from step {warmup}")
    results = {"model": args.model, "steps": args.steps, "every": args.every, "warmup": warmup,
               "rss_tolerance_mib": RSS_TOLERANCE_MIB, "object_tolerance": OBJECT_TOLERANCE, "modes": {}}
    all_passed = True
    with tempfile.TemporaryDirectory(prefix="kiln-long-run-") as directory:
        for mode in args.modes.split(","):
            start = time.perf_counter()
            record = run_mode(args, mode, directory)
            record["process_s"] = time.perf_counter() - start
            if record["status"] == "ran":
                samples = record["samples"]
                record["drift"], record["passed"] = judge(samples, warmup)
                timed = [entry for entry in samples if entry["step"] >= warmup]
                record["step_s"] = ((timed[-1]["seconds"] - timed[0]["seconds"]) /
                                    max(timed[-1]["step"] - timed[0]["step"], 1))
            else:
                record["passed"] = False
            all_passed = all_passed and record["passed"]
            results["modes"][mode] = record
            print(f"\n{mode}: {'PASS' if record['passed'] else 'FAIL'}"
                  + (f" ({record['error']})" if record["status"] != "ran" else
                     f", {record['step_s'] * 1000:.1f} ms a step after warm-up, {record['process_s']:.0f} s in all"))
            for metric, entry in record.get("drift", {}).items():
                print(f"  {metric:17} change {figure(metric, entry['change']):>12}  range "
                      f"{figure(metric, entry['range']).lstrip('+'):>11}  slope "
                      f"{figure(metric, entry['slope_per_1000_steps']):>12}/1000 steps  "
                      f"{'ok' if entry['passed'] else 'FAIL'} ({entry['tolerance']})")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"header": lines, "args": vars(args), "results": results}, out, indent=2)
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
