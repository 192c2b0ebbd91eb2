#!/usr/bin/env python
"""Renders docs/performance.md, the current figure of each benchmark, from the
JSON the bench scripts write with --json.

    python bench/render_performance.py [--results bench/results] [--output docs/performance.md]

`make bench` runs every benchmark with `--json bench/results/<name>.json`, then
this script; `make performance` runs this script alone, on the JSON already
there. Each section of the page is stamped with the header its benchmark
recorded (bench/run_info.py: command, commit, date, machine), so a figure on the
page can be traced to the run that measured it. A benchmark whose JSON is absent
is listed as not measured; a JSON file no entry below knows is still rendered,
as a plain table of its results. Standard library only: it runs without torch
or a build of Kiln. The page's text is here; its figures come only from the JSON.
"""
import argparse
import dataclasses
import json
import os
import sys
from typing import Callable

from render_adaptive_eager import chains_table, suite_table
from render_compile import render_compile
from render_common import (geometric_mean, last_update, number, parse_header, ratio_of, ratio_text, scaled, size_text,
                           stamp, table)

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_RESULTS = os.path.join(REPOSITORY, "bench", "results")
DEFAULT_OUTPUT = os.path.join(REPOSITORY, "docs", "performance.md")


# ---------------------------------------------------------------- one renderer per benchmark

def render_copies(results, args):
    kiln_cases, sizes, cells = [], [], {}
    for row in results:
        if row["size_bytes"] not in sizes:
            sizes.append(row["size_bytes"])
        if not row["case"].startswith("memcpy") and row["case"] not in kiln_cases:
            kiln_cases.append(row["case"])
        cells[(row["size_bytes"], row["case"])] = row
    heading = ["size", "memcpy (numpy) GB/s", "memcpy (torch) GB/s"] + [f"{case} GB/s (x numpy)"
                                                                        for case in kiln_cases]
    rows = []
    for size in sizes:
        row = [size_text(size)]
        for case in ("memcpy (numpy)", "memcpy (torch)"):
            row.append(number(cells[(size, case)]["gb_per_s"]) if (size, case) in cells else "-")
        for case in kiln_cases:
            entry = cells.get((size, case))
            row.append("-" if entry is None else
                       f"{number(entry['gb_per_s'])} ({ratio_text(entry['ratio_vs_numpy_memcpy'])})")
        rows.append(row)
    rows.append(["geomean x numpy", "", ""] + [ratio_text(geometric_mean(
        [cells[(size, case)]["ratio_vs_numpy_memcpy"] for size in sizes if (size, case) in cells]))
        for case in kiln_cases])
    kiln_rows = [row for row in results if not row["case"].startswith("memcpy")]
    lines = table(heading, rows)
    if kiln_rows:
        lowest = min(kiln_rows, key=lambda row: row["ratio_vs_numpy_memcpy"])
        lines += ["", f"Lowest kiln case against memcpy (numpy): {ratio_text(lowest['ratio_vs_numpy_memcpy'])} "
                      f"({lowest['case']}, {size_text(lowest['size_bytes'])}); target >= 0.8x. "
                      "x numpy = the memcpy's median time / the case's."]
    return lines


def render_native_ops(results, args, extra):
    rows = []
    for row in results:
        rows.append([f"`{row['op']}`", number(row["kiln_us"]), number(row["cpu_us"]),
                     ratio_text(ratio_of(row["cpu_us"], row["kiln_us"])),
                     "-" if row.get("kiln_issue_us") is None else number(row["kiln_issue_us"])])
    rows.append(["geomean", "", "", ratio_text(geometric_mean(
        [ratio_of(row["cpu_us"], row["kiln_us"]) for row in results])), ""])
    lines = table(["op", "kiln us", "cpu us", "cpu / kiln", "kiln issue us"], rows)
    if extra.get("synchronize_idle_us") is not None:
        lines += ["", f"`torch.kiln.synchronize()` on an idle stream: {number(extra['synchronize_idle_us'])} us. "
                      "Target: cpu / kiln >= 0.5x (kiln within 2x of the CPU). "
                      "Issue us: a queued op's loop without waiting for the stream."]
    return lines


def render_eager_ops(results, args):
    lines = []
    parts = [("per_op", "Per-op cost on a cache hit", "us", 1e6, "target cpu / kiln >= 0.67x"),
             ("throughput", "Throughput", "ms", 1e3, "target cpu / kiln >= 0.9x"),
             ("row_ops", "Row ops", "us", 1e6, "no target")]
    for key, title, unit, scale, target in parts:
        part = results.get(key)
        if not part:
            continue
        inductor = any("inductor" in row for row in part)
        heading = ["case", f"kiln {unit}", f"cpu {unit}", "cpu / kiln"]
        if inductor:
            heading += [f"inductor {unit}", "inductor / kiln"]
        rows = []
        for row in part:
            cells = [row["case"], number(scaled(row.get("kiln"), scale)), number(scaled(row.get("cpu"), scale)),
                     ratio_text(ratio_of(row.get("cpu"), row.get("kiln")))]
            if inductor:
                cells += [number(scaled(row.get("inductor"), scale)),
                          ratio_text(ratio_of(row.get("inductor"), row.get("kiln")))]
            rows.append(cells)
        mean = ["geomean", "", "", ratio_text(geometric_mean([ratio_of(row.get("cpu"), row.get("kiln"))
                                                                for row in part]))]
        if inductor:
            mean += ["", ratio_text(geometric_mean([ratio_of(row.get("inductor"), row.get("kiln"))
                                                     for row in part]))]
        rows.append(mean)
        lines += [f"{title} ({unit} per call; {target}):", ""] + table(heading, rows) + [""]
    return lines[:-1]


def render_training(results, args):
    rows, ratios = [], []
    for model, entry in results.items():
        ratio = ratio_of(entry.get("cpu_step_s"), entry.get("kiln_step_s"))
        ratios.append(ratio)
        cold, warm = entry.get("cold", {}), entry.get("warm", {})
        rows.append([model, number(scaled(entry.get("kiln_step_s"), 1e3)), number(scaled(entry.get("cpu_step_s"), 1e3)),
                     ratio_text(ratio), number(entry.get("fallback_ops")),
                     number(cold.get("kernels_compiled")), number(cold.get("compile_seconds")),
                     number(cold.get("seconds")), number(warm.get("seconds")),
                     number(entry.get("cpu_first_step_s"))])
    rows.append(["geomean", "", "", ratio_text(geometric_mean(ratios))] + [""] * 6)
    return table(["model", "kiln step ms", "cpu step ms", "cpu / kiln", "fallback ops",
                  "cold: kernels compiled", "cold: compile s", "cold: first step s", "warm: first step s",
                  "cpu first step s"], rows) + [
        "", "Step time: median over the run's steps; target cpu / kiln >= 1.0x. First steps: fresh processes, "
            "cold with an empty kernel cache, warm on the same cache."]


LIBRARY_TARGET = 0.95


def library_family(case):
    """The row a bench_library case is summarised in: its op and dtype."""
    return f"{case.get('kind', '?').replace('_', ' ')} {case.get('dtype', '')}".strip()


def render_library(results, args):
    """bench_library.py: per op family, the geometric mean and the lowest
    ratio at each thread count; then every case below the target. Each
    case's own times are in the JSON."""
    threads = list(results)
    families = {}
    for count in threads:
        for name, case in results[count].get("cases", {}).items():
            ratio = ratio_of(case.get("cpu_s"), case.get("kiln_s"))
            families.setdefault(library_family(case), {}).setdefault(count, []).append(ratio)
    rows = []
    for family, by_threads in families.items():
        cells = []
        for count in threads:
            ratios = [ratio for ratio in by_threads.get(count, []) if ratio is not None]
            cells.append(f"{ratio_text(geometric_mean(ratios))} ({ratio_text(min(ratios))})" if ratios else "n/a")
        rows.append([family, str(len(by_threads.get(threads[0], [])))] + cells)
    overall = []
    for count in threads:
        ratios = [ratio_of(case.get("cpu_s"), case.get("kiln_s")) for case in results[count].get("cases", {}).values()]
        present = [ratio for ratio in ratios if ratio is not None]
        overall.append(f"{ratio_text(geometric_mean(present))} ({ratio_text(min(present))})" if present else "n/a")
    rows.append(["all", str(sum(len(by_threads.get(threads[0], [])) for by_threads in families.values()))] + overall)
    heading = ["ops", "cases"] + [f"{count} thread{'s' if str(count) != '1' else ''}: geomean (lowest)"
                                  for count in threads]
    lines = table(heading, rows) + [""]
    below = [[name, str(count), number(scaled(case.get("cpu_s"), 1e3)), number(scaled(case.get("kiln_s"), 1e3)),
              ratio_text(ratio_of(case.get("cpu_s"), case.get("kiln_s")))]
             for count in threads for name, case in results[count].get("cases", {}).items()
             if (ratio_of(case.get("cpu_s"), case.get("kiln_s")) or 0) < LIBRARY_TARGET]
    if below:
        lowest = sorted(below, key=lambda row: float(row[4].rstrip("x")))[:LIBRARY_LISTED]
        lines += [f"Cases below the target: {len(below)}; the {len(lowest)} lowest:", ""]
        lines += table(["case", "threads", "cpu ms", "kiln ms", "cpu / kiln"], lowest) + [""]
    fallbacks = sorted({op for count in threads for op in results[count].get("fallback_ops") or []})
    lines += [f"Kiln fell back on: {', '.join(fallbacks)}." if fallbacks else "No op fell back.", ""]
    return lines + [f"cpu / kiln of each case's best time per call over the processes of each mode (the JSON has "
                    f"every case's times); target >= {LIBRARY_TARGET}x for every case at every thread count, in "
                    f"both modes `torch.set_num_threads(threads)`."]


LIBRARY_LISTED = 10  # cases below the target listed on the page (the JSON has them all)


def render_models(results, args):
    """bench_models.py: a row per model."""
    models = results.get("models", {})
    rows, ratios = [], []
    for name, entry in models.items():
        ratio = ratio_of(entry.get("cpu_step_s"), entry.get("kiln_step_s"))
        ratios.append(ratio)
        rows.append([name, entry.get("model", ""), number(scaled(entry.get("cpu_step_s"), 1e3)),
                     number(scaled(entry.get("kiln_step_s"), 1e3)), ratio_text(ratio),
                     number(entry.get("cpu_first_loss")), number(entry.get("kiln_first_loss")),
                     ", ".join(entry.get("fallback_ops") or []) or "none"])
    rows.append(["geomean", "", "", "", ratio_text(geometric_mean(ratios)), "", "", ""])
    return table(["model", "what", "cpu step ms", "kiln step ms", "cpu / kiln", "loss cpu", "loss kiln",
                  "fallback ops"], rows) + [
        "", "Step: forward, loss, backward, AdamW; median over the timed steps, best of the processes per mode. "
            "Loss: before training, in eval mode (no dropout), same weights and data. Target cpu / kiln >= 1.0x."]


def render_foreach(results, args):
    ops = results.get("ops", [])
    rows = []
    for entry in ops:
        us = entry["us"]
        rows.append([f"`{entry['op']}`", number(us.get("cpu")), number(us.get("kiln-loop")),
                     number(us.get("kiln-foreach")), ratio_text(ratio_of(us.get("kiln-loop"), us.get("kiln-foreach"))),
                     ratio_text(ratio_of(us.get("cpu"), us.get("kiln-foreach")))])
    rows.append(["geomean", "", "", "",
                 ratio_text(geometric_mean([ratio_of(e["us"].get("kiln-loop"), e["us"].get("kiln-foreach"))
                                            for e in ops])),
                 ratio_text(geometric_mean([ratio_of(e["us"].get("cpu"), e["us"].get("kiln-foreach"))
                                            for e in ops]))])
    lines = [f"{number(results.get('tensors'))} tensors, {number(results.get('elements'))} float32 elements "
             "(the transformer's parameters); us per call, median:", ""]
    lines += table(["op", "cpu us", "kiln-loop us", "kiln-foreach us", "loop / foreach", "cpu / foreach"], rows)
    step = results.get("optimizer_step_us", {})
    if step:
        baseline = next(iter(step.values()))
        baseline_name = next(iter(step))
        lines += ["", "`clip_grad_norm_` + AdamW step, us, median:", ""]
        lines += table(["variant", "us", f"({baseline_name}) / variant"],
                       [[name, number(value), ratio_text(ratio_of(baseline, value))] for name, value in step.items()])
    return lines


def render_adaptive_eager(results, args):
    return chains_table(results)


def render_adaptive_suite(results, args, data):
    return suite_table(results, data)


def render_allreduce(results, args):
    rows = []
    for row in results:
        ratio = ratio_of(row.get("gloo"), row.get("kiln"))
        rows.append([size_text(row["bytes"]), number(scaled(row.get("gloo"), 1e6)),
                     number(scaled(row.get("kiln"), 1e6)),
                     number(ratio_of(row["bytes"] / 1e9, row.get("gloo"))),
                     number(ratio_of(row["bytes"] / 1e9, row.get("kiln"))), ratio_text(ratio)])
    ratios = [ratio_of(row.get("gloo"), row.get("kiln")) for row in results]
    rows.append(["geomean", "", "", "", "", ratio_text(geometric_mean(ratios))])
    known = [value for value in ratios if value is not None]
    lines = table(["size", "gloo us", "kiln us", "gloo GB/s", "kiln GB/s", "gloo / kiln time"], rows)
    if known:
        lines += ["", f"Lowest gloo / kiln: {ratio_text(min(known))}; target >= 0.9x at every size."]
    return lines


def render_ddp(results, args):
    rows = []
    for model, entry in results.items():
        rows.append([model, number(scaled(entry.get("single_step_s"), 1e3)),
                     number(scaled(entry.get("ddp_step_s"), 1e3)), ratio_text(entry.get("efficiency"))])
    efficiencies = [entry.get("efficiency") for entry in results.values()]
    rows.append(["geomean", "", "", ratio_text(geometric_mean(efficiencies))])
    return table(["model", "single process, half batch, ms", "DDP on 2 ranks, ms", "efficiency (single / DDP)"], rows)


def render_import(results, args):
    modes = [mode for mode in ("autoload_on", "autoload_off") if f"{mode}_median_s" in results]
    if not modes:
        raise KeyError("autoload_on_median_s")
    rows = [[f"`import torch`, {mode.replace('_', ' ')}", number(results.get(f"{mode}_median_s")),
             number(results.get(f"{mode}_min_s")), number(results.get(f"{mode}_process_median_s"))]
            for mode in modes]
    rows.append(["autoload's cost (on - off)", number(results.get("autoload_cost_median_s")),
                 number(results.get("autoload_cost_min_s")), ""])
    lines = table(["", "median s", "min s", "whole process, median s"], rows)
    notes = []
    if results.get("target_autoload_cost_s") is not None:
        notes.append(f"Target: the autoload adds at most {number(results['target_autoload_cost_s'])} s.")
    if results.get("kiln_importtime_self_median_us") is not None:
        notes.append(f"`python -X importtime` ({number(results.get('importtime_rounds'))} runs): torch_kiln's own "
                     f"module bodies {number(results['kiln_importtime_self_median_us'] / 1000)} ms median; with "
                     f"what they import that torch had not, "
                     f"{number(results.get('kiln_importtime_cumulative_median_us', 0) / 1000)} ms.")
    if "kiln_modules_loaded" in results:
        notes.append(f"{len(results['kiln_modules_loaded'])} torch_kiln modules load with `import torch`.")
    if "dynamo_loaded_by_import_torch" in results:
        notes.append("`torch._dynamo` loads with `import torch`: "
                     f"{'yes' if results['dynamo_loaded_by_import_torch'] else 'no'} (it should not).")
    if notes:
        lines += ["", " ".join(notes)]
    return lines


def render_long_run(results, args):
    """bench_long_run.py: each mode's drift after warm-up, and its verdict."""
    mib = 1024 * 1024

    def memory(entry):
        return f"{entry['change'] / mib:+.2f} MiB ({entry['slope_per_1000_steps'] / mib:+.2f})"

    def count(entry):
        return f"{entry['change']:+d} ({entry['slope_per_1000_steps']:+.1f})"

    def device(entry):
        return "flat" if entry["range"] == 0 else f"{entry['change']:+d} B (range {entry['range']} B)"

    rows = []
    for mode, record in results["modes"].items():
        if record.get("status") != "ran":
            rows.append([mode, f"FAIL: {record.get('error', 'did not run')}", "", "", "", "", "", ""])
            continue
        drift = record["drift"]
        rows.append([mode, "pass" if record["passed"] else "FAIL", device(drift["device_allocated"]),
                     device(drift["device_reserved"]), memory(drift["rss"]), f"{drift['rss']['range'] / mib:.2f} MiB",
                     count(drift["live_objects"]), number(record["step_s"] * 1000)])
    lines = table(["mode", "verdict", "device allocated", "device reserved", "RSS change (per 1000 steps)",
                   "RSS range", "live objects change (per 1000 steps)", "ms a step"], rows)
    first = next(iter(results["modes"].values()), {})
    span = ""
    if first.get("drift"):
        rss = first["drift"]["rss"]
        span = f" from step {rss['from_step']} to step {rss['to_step']}"
    lines += ["", f"`{results['model']}`, {results['steps']} steps, a sample every {results['every']} steps; the "
                  f"drift is measured{span} (warm-up: the first {results['warmup']} steps). Change: the last "
                  "sample minus the first after warm-up; in brackets, the least-squares slope per 1000 steps. "
                  f"Pass: device memory exactly flat, RSS within {number(results['rss_tolerance_mib'])} MiB and "
                  f"live objects within {results['object_tolerance']} (change and fitted drift)."]
    return lines


def render_profiler(results, args):
    rows = []
    for entry in results.get("workloads", []):
        us, lowest = entry.get("us", {}), entry.get("lowest_us", {})
        rows.append([entry["workload"]] + [number(us.get(mode)) for mode in ("never", "off", "on")] +
                    [ratio_text(entry.get("off_over_never")), ratio_text(entry.get("on_over_never")),
                     ratio_text(entry.get("off_over_never_lowest")), ratio_text(entry.get("on_over_never_lowest")),
                     number(entry.get("device_events_on"))])
    lines = [f"us per iteration, median of {number(results.get('rounds'))} rounds (one process per mode and "
             f"round), {number(results.get('iterations'))} iterations each:", ""]
    return lines + table(["workload", "never us", "off us", "on us", "off / never", "on / never",
                          "off / never (lowest)", "on / never (lowest)", "device events (on)"], rows)


def scalar(value):
    return value is None or isinstance(value, (int, float, str, bool))


def cell(value):
    return f"`{value}`" if isinstance(value, str) and " " not in value and len(value) > 24 else \
        (value if isinstance(value, str) else number(value))


def render_generic(results, args):
    """Any JSON: a dict of figures, a dict of dicts, a list of dicts, or (for
    anything deeper) one row per leaf, its path and its value."""
    if isinstance(results, dict) and all(scalar(value) for value in results.values()):
        return table(["figure", "value"], [[key, cell(value)] for key, value in results.items()])
    rows_in = None
    if isinstance(results, dict) and all(isinstance(value, dict) and all(scalar(v) for v in value.values())
                                         for value in results.values()):
        rows_in = [{"": key, **value} for key, value in results.items()]
    elif isinstance(results, list) and all(isinstance(value, dict) and all(scalar(v) for v in value.values())
                                           for value in results):
        rows_in = results
    if rows_in:
        columns = []
        for row in rows_in:
            columns += [key for key in row if key not in columns]
        return table([column or "case" for column in columns],
                     [[cell(row.get(column)) if column in row else "-" for column in columns] for row in rows_in])
    leaves = []

    def walk(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list) and not all(scalar(item) for item in value):
            for index, item in enumerate(value):
                walk(item, f"{path}[{index}]")
        else:
            leaves.append([f"`{path}`", cell(value) if scalar(value) else ", ".join(cell(v) for v in value)])
    walk(results, "")
    return table(["figure", "value"], leaves)


def render_suite(results, args, data):
    """bench_suite.py: the per-suite pass rates and geometric means (the
    per-model rows are in docs/models.md)."""
    from render_models import summary_table  # imports this module: not at the top
    return summary_table(data.get("summary", {})) + ["", "Per model, with the reasons for every failure, and "
                                                         "charts: [models.md](models.md)."]


def render_moe_suite(results, args, data):
    """bench_suite.py --models moe: the suite's summary and a row per model and task (the
    full suites' page, models.md, comes from a run of every model)."""
    from render_models import model_table, summary_table  # imports this module: not at the top
    lines = summary_table(data.get("summary", {}))
    for task in ("train", "infer"):
        lines += ["", f"{task}:", ""] + model_table(results, task)
    return lines


# ---------------------------------------------------------------- the benchmarks

@dataclasses.dataclass
class Benchmark:
    name: str        # bench/results/<name>.json
    script: str      # bench/<script>
    title: str
    measures: str    # one paragraph: what is timed, against what
    render: Callable
    reading: str = ""  # what to know when reading the figures (no figures here: they change)


BENCHMARKS = [
    Benchmark("copies", "bench_copies.py", "Host<->device copies",
              "Bandwidth of `copy_` between host and kiln memory (pageable, and pinned with `non_blocking=True` "
              "then one `torch.kiln.synchronize()`) and within kiln memory (D2D, queued as `clone()` is), in GB/s "
              "(1e9 bytes), beside two CPU-to-CPU copies of the same "
              "bytes: `np.copyto` (one glibc memcpy on one thread, the plain memcpy of the target) and ATen's CPU "
              "copy (split over `torch.get_num_threads()` threads above 32768 elements). Target: >= 0.8x the "
              "memcpy's bandwidth.", render_copies,
              "Kiln splits a byte copy over the host's threads as ATen's CPU copy does: from 512 KiB when the host "
              "waits for it (pageable), from 4 MiB when it is queued (pinned non_blocking, D2D), since the host "
              "thread then dispatches beside it on one of the same cores (`csrc/kiln/aten/native/copy.cc`); the "
              "target is against `np.copyto`. glibc's memcpy slows down when "
              "the destination trails the source by 64-512 bytes modulo 4 KiB, which a device-to-host copy into a "
              "PyTorch CPU buffer hits; the host driver copies such blocks in 256 KiB pieces "
              "(`csrc/kiln/runtime/host_driver.cc`). Small copies carry the synchronous path's fixed cost "
              "(dispatch, the stream lock)."),
    Benchmark("native_ops", "bench_native_ops.py", "Native ops",
              "Per-call cost of Kiln's native ops (empty, views, small copies, `fill_`, `zero_`, `.item()`) called "
              "from Python in a loop, beside the same op on the CPU; microseconds per call, Python and dispatcher "
              "included on both sides. Ops Kiln queues on its stream end the loop with one synchronize inside the "
              "timed region. Target: within 2x of the CPU.", render_native_ops,
              "Work under 32 KiB on an idle stream runs in the caller (`Stream::launch`); larger queued work runs "
              "on the stream's worker, on another core, while the caller issues the next call, which can put a "
              "queued copy ahead of the CPU's."),
    Benchmark("eager_ops", "bench_eager_ops.py", "Compiled eager ops",
              "Kiln's compiled eager kernels beside CPU eager and (with `--inductor`) CPU Inductor of the same "
              "lambda: a tiny op's cost on a kernel-cache hit, throughput on 16M float32 elements, and row ops "
              "(softmax, layer norm, cross entropy) at the reference models' sizes and at 8192x256.",
              render_eager_ops,
              "Multi-op expressions on large tensors (`x*y+z`) favour Kiln by more than its kernels' speed: "
              "Kiln's caching allocator reuses the large temporaries, where CPU eager faults in fresh pages for "
              "each. A tiny op's cost is mostly fixed: ATen's TensorIterator, the kernel signature's hash and "
              "the launch."),
    Benchmark("training", "bench_training.py", "Training steps and cold start",
              "A training step of the three reference models of `torch_kiln.models` (MLP with Adam; CNN with SGD "
              "and momentum; decoder-only transformer with AdamW and `clip_grad_norm_`) on kiln eager beside CPU "
              "eager, and the first step in a fresh process with an empty, then a warm, kernel cache.",
              render_training,
              "A cold first step is dominated by the C compiler building each kernel once; a warm one compiles "
              "nothing. Much of any first step, the CPU's too, is PyTorch importing `torch._dynamo` when the "
              "optimizer is made."),
    Benchmark("models", "bench_models.py", "Training steps of real models",
              "Training steps of models no one here wrote, with random weights: torchvision's ResNet-18 and "
              "ResNet-50 and Hugging Face's GPT-2, BERT and Llama (small configurations, see the table), kiln "
              "eager against CPU eager, each (model, mode) in its own process, the processes taking turns. "
              "Target: cpu / kiln >= 1.0x for every model.", render_models,
              "Products and convolutions dominate these steps; on kiln a large one is split over Kiln's thread "
              "pool ([library path](design/library_path.md)). Figures move by 5-10 % between runs on a shared "
              "2-core VM."),
    Benchmark("suite", "bench_suite.py", "Model suites (torchvision, TIMM, transformers)",
              "Real models with random weights in four modes, each (model, task, mode) in its own process: CPU "
              "eager, Inductor, kiln eager, kiln compiled; training (forward, loss, backward, AdamW) and inference. "
              "Pass: it ran, nothing fell back, and loss, outputs and gradients match the CPU's (judged against a "
              "float64 run, [benchmarks](reference/benchmarks.md#the-model-suites)); speed: the median step after "
              "warm-up, geometric means over the models that passed. Targets: every model passes in every mode; "
              "kiln compiled >= 1.1x Inductor and kiln eager >= 1.0x CPU eager per suite.", render_suite),
    Benchmark("moe_suite", "bench_suite.py", "Mixture-of-experts suite",
              "The `moe` suite of `bench/suite_models.py`: seven transformers decoders with 4-8 small experts, 2 "
              "per token (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE, Granite-MoE, DeepSeek-V3, GPT-OSS), as the model "
              "suites run them: training and inference, CPU eager, Inductor, kiln eager and kiln compiled, each "
              "(model, task, mode) in its own process. Targets: every model passes eagerly and compiled with no "
              "fallback; kiln eager >= CPU eager, kiln compiled >= Inductor.", render_moe_suite,
              "Numerics are judged against a float64 run of the CPU in which transformers' experts run as its "
              "per-expert loop (`set_experts_implementation(\"eager\")`: `torch._grouped_mm` takes float32 and "
              "bfloat16 only). The experts' products: eagerly, kiln's own `_grouped_mm` (one queued launch per "
              "call, no offsets read back) against the CPU's loop of one `mm` per expert; compiled, float32 "
              "experts call transformers' fallback op, which kiln runs as `_grouped_mm` on its stream "
              "([compiled path](design/compiled_path.md#which-ops-become-extern-calls)) and Inductor as the "
              "op's loop. Compiled inference programs of these models are queued step by step, not run inline "
              "([where a program runs](design/compiled_path.md#where-a-program-runs)): the routing (top-k, sort, "
              "histogram, cumsum, gathers and scatters) is a chain of small extern calls whose dispatch on the "
              "host takes longer than their arithmetic, and queued the two overlap; Inductor generates fused "
              "C++ loops for it instead, and stays ahead on DeepSeek-V3, whose program makes the most calls "
              "(364). Figures of single processes move by up to 20-30 % on this VM; the inference rows are "
              "the median of 3 rounds, the training rows of 1."),
    Benchmark("adaptive_eager", "bench_adaptive_eager.py", "Adaptive eager: hand-written chains",
              "Pointwise chains written as their formulas (GELU's tanh and erf forms, RMSNorm, LayerNorm, "
              "SwiGLU's activations) and an Adam step with `foreach=False`, in CPU eager, kiln eager with adaptive "
              "eager off (`KILN_ADAPTIVE_EAGER=0`) and on, and `torch.compile(backend=\"kiln\")`, each mode in its "
              "own process ([adaptive eager](design/adaptive_eager.md)). Targets: adaptive >= 2x unfused, and at "
              "least as fast as compiled on the pure-pointwise chains.", render_adaptive_eager,
              "Reductions fuse with the pointwise ops around them: RMSNorm and LayerNorm written as their "
              "formulas run as one row kernel each (the square and the statistic folded row by row, then the "
              "normalisation, weight and bias along the row; LayerNorm's first mean runs alone before it). A "
              "loop of one chain runs one region per call: a region full at its launch limits ends where an "
              "independent chain began, so each chain has one or two region kernels (the first call, started "
              "on an idle device, may have its own). Unfused ops on these 8 MB tensors read mostly from the 32 MB L3 "
              "cache, so fusion saves less time than it saves traffic (RMSNorm's row kernel reads and writes the "
              "tensor once where the unfused ops pass over it four times, for 1.9x). Where compiled stays "
              "ahead, the host's dispatch of each op (GELU's nine per call) takes one of the two cores the fused "
              "kernels run on. Results are kept alive (a list of the calls' outputs), so every call's output is "
              "stored: nothing is skipped as dead. Single processes move by up to 30 % on this VM."),
    Benchmark("adaptive_suite", "bench_suite.py", "Adaptive eager on the model suites",
              "The model suites in kiln eager with adaptive eager off and on (`--modes "
              "kiln_eager_unfused,kiln_eager`), each (model, task, mode) in its own process, beside CPU eager. "
              "Targets: adaptive / CPU eager >= 1.3x per suite, never below unfused by more than the noise, the "
              "first step within 10 % of unfused, and no new region kernels after the fifth step.",
              render_adaptive_suite,
              "A region opens only at an op of 256 KiB or more, and not at an op whose region once ended with "
              "it alone (until it begins a chain): the small Hugging Face models (ops of 96 to 192 KiB, where "
              "the host, not the device, is the bottleneck) hold little or nothing and run as unfused does, "
              "while the CNNs and the larger ops of the transformers fuse. In Hugging Face inference only GPT-2 "
              "fuses: the other 15 models hold at most three ops in a process and otherwise run the same code "
              "in both modes, so their adaptive / "
              "unfused ratios (0.63x to 1.33x in the 3-round run of 2026-12-08) measure the noise alone. The "
              "steps are timed once the background compiles are done. Per model the ratios are "
              "mostly noise: each process times about one second of steps, and on this VM a process (CPU eager "
              "as much as kiln) can run 40-60 % slower for seconds at a time, with the same threads on the same "
              "cores doing the same work; the three rounds of a model differed by 25 % on average for CPU eager "
              "and 21-22 % for the kiln modes. Repeated runs of the whole suite on this VM give per-model "
              "ratios that differ by up to 0.3 and per-suite ratios against CPU eager that differ by up to "
              "0.16 (CPU eager's own steps move as much), so the per-suite figures are good to about that."),
    Benchmark("library", "bench_library.py", "Products, convolutions, FFT and linear algebra (library path)",
              "One op called over and over, kiln against the CPU's own kernel, each (mode, thread count) in its "
              "own process: `mm` from 64^3 to 4096^3, tall-skinny and wide products, a transformer's projections "
              "(`F.linear`) and attention's `bmm`, in float32 and bfloat16; the convolutions of ResNet-18 and "
              "ResNet-50 (batch 4, 224x224) forward and backward (`aten.convolution_backward`), float32; "
              "`torch.fft.rfft` and `fft2`, and batched `torch.linalg` inverse, Cholesky, QR and solve, float32. "
              "Target: "
              "cpu / kiln >= 0.95x for every case, at 1 thread, 2 threads and all threads.", render_library,
              "Each call's result is dropped before the queued call that writes it ran; its memory is reused "
              "in stream order ([memory](design/memory.md)), so the next call writes a buffer still in the "
              "caches, as on the CPU. Both modes run with glibc's malloc thresholds fixed (the script's "
              "docstring): with glibc's dynamic ones, the CPU's 7x7 convolution took 13.5 ms or 4.6 ms depending "
              "on the cases run before it in its process. Small calls (under 2 MFLOP) run on one thread, where "
              "dispatch dominates (64^3: about 1 us of 7). An FFT's result, and a k x k convolution's, is "
              "computed into a CPU tensor by the CPU kernel and copied into the device output: one more pass "
              "than the CPU's call (0.8-0.9x), which PyTorch gives no way around (neither op has an out= "
              "kernel that writes in place, and oneDNN's symbols are not exported). Figures of single cases "
              "move by up to 10-20 % between runs on a shared 2-core VM (the same single-threaded MKL call "
              "read 0.94x in one run), more at 2 threads."),
    Benchmark("library_grouped", "bench_library.py", "Grouped products (mixture-of-experts experts)",
              "`torch.nn.functional.grouped_mm` at the expert shapes of the MoE suite (tokens x hidden x "
              "expert width, 4 or 8 experts, jagged offsets) and one larger shape, float32 and bfloat16, kiln's "
              "own kernel (one queued launch, [library path](design/library_path.md#grouped-products-"
              "mixture-of-experts)) against the CPU's composite loop, each (mode, thread count) in its own "
              "process. Target: cpu / kiln >= 0.95x for every case.", render_library,
              "The CPU's grouped product is PyTorch's loop of one `mm` per group (oneDNN in bfloat16, about "
              "15-25 us a call before any arithmetic); kiln's shares the groups' rows out as one run per "
              "thread, so small groups are not each a call per thread. Single cases move by 10-20 % between "
              "runs on this VM."),
    Benchmark("foreach", "bench_foreach.py", "Foreach ops",
              "Foreach ops over the transformer's parameters on kiln (one launch per call) beside the same work "
              "op by op on kiln and beside the CPU; then a whole `clip_grad_norm_` + AdamW step with "
              "`foreach=False` and `True`. No target.", render_foreach),
    Benchmark("compile", "bench_compile.py", "torch.compile(backend=\"kiln\")",
              "The reference models under `torch.compile(model, backend=\"kiln\")` (kiln-compiled) beside kiln "
              "eager, CPU eager and CPU Inductor, all in one process taking turns: the steady-state training step "
              "and inference, the first step in a fresh process (cold and warm caches), each model's optimizer "
              "step, and a 16-op pointwise chain. kiln-dynamo-floor is Dynamo's own cost per inference call (a "
              "backend that runs nothing). Targets: Inductor / kiln-compiled >= 1.0 (steady state and first step), "
              "kiln-eager / kiln-compiled > 1 (steady state) and >= 4 (chain).", render_compile,
              "Only the model's forward is compiled (Dynamo and AOTAutograd compile its backward); loss, backward "
              "call and optimizer stay eager, as in `torch_kiln.models.Training`. Dynamo's own cost per call "
              "(kiln-dynamo-floor) is paid by every backend: on a model as small as the MLP it leaves a compiled "
              "forward too little time to beat kiln eager. Odd rounds run the modes in reverse order, as the "
              "mode timed right after another measures differently. The modes share one process; only its "
              "initial thread runs an OpenMP team ([library path](design/library_path.md)), so Kiln's work "
              "does not slow the CPU modes' parallel regions."),
    Benchmark("allreduce", "bench_allreduce.py", "torch.distributed all_reduce",
              "Synchronous `all_reduce(SUM)` of float32 on 2 ranks of one machine, one group "
              "\"cpu:gloo,kiln:kiln\": Gloo on CPU tensors beside Kiln's backend on kiln tensors, taking turns call "
              "by call, from 1 KiB up. Target: gloo / kiln time >= 0.9x at every size.", render_allreduce,
              "Within a host Kiln's collectives go through shared memory ([distributed](design/distributed.md)), Gloo "
              "through loopback TCP. From 256 KiB the CPU `fill_` before each Gloo call is an OpenMP loop whose "
              "threads then spin into the kiln call timed next, which costs Kiln there; `OMP_WAIT_POLICY=passive` "
              "removes that artefact of the turn-taking. Small sizes are latency and move most between runs."),
    Benchmark("ddp", "bench_ddp.py", "DDP scaling",
              "A training step under DistributedDataParallel on 2 kiln ranks, each on half the batch, against "
              "one kiln process on half the batch. Efficiency = single / DDP step time (1.0: communication costs "
              "nothing). On a machine with fewer cores than the ranks' threads need, the ranks also compete for "
              "cores, which the figure includes.", render_ddp,
              "Each rank brings its Python thread, stream worker, pool worker and Gloo's and the completion "
              "thread: on a 2-core machine the efficiency measures the ranks' turns on the cores more than "
              "communication, and says little about a machine with a core per thread."),
    Benchmark("long_run", "bench_long_run.py", "Long runs: memory and objects over 2,000 steps",
              "A suite model (bench/suite_models.py) trained for thousands of steps (forward, loss, backward, "
              "AdamW) in kiln eager and kiln compiled, each in its own process, sampled every few dozen steps "
              "after `gc.collect()` and glibc's `malloc_trim`: device memory allocated and reserved "
              "(`torch.kiln.memory_allocated()`, `memory_reserved()`), the process's resident memory, and "
              "`len(gc.get_objects())`. Target: nothing drifts after warm-up.", render_long_run,
              "Device memory is exact and is held to exactly flat. RSS is the whole process's, libraries and "
              "Python included; malloc_trim before each sample hands back what malloc keeps free, but a sample "
              "can still land a few MiB off its neighbours (the range, not the change, shows that), so RSS is "
              "judged on the change and the fitted line. In compiled mode RSS rises once, by a few MiB near "
              "step 1000, and is flat before and after; a loop of the same model outside the benchmark does "
              "not show it, and where it comes from is not known. "
              "Step times come from a shared 2-core VM and move with its load; they are not what this "
              "benchmark measures."),
    Benchmark("custom_kernels", "bench_custom_kernels.py", "Custom kernels: RMSNorm",
              "The fused RMSNorm of `examples/custom_rms_norm.py`, as C kernels registered with "
              "`torch.library.custom_op` (`kiln-custom`) and in Kiln's kernel language (`kiln-language`), against "
              "the composite `x * rsqrt(mean(x^2) + eps) * weight` in CPU eager, kiln eager without and with "
              "adaptive eager, and `torch.compile(backend=\"kiln\")`, each mode in its own process "
              "([custom kernels](guides/custom_kernels.md)); forward (10 calls in a row, results kept alive) and "
              "train (forward and backward of x and weight), float32, us per call, median of the rounds. The "
              "columns `<mode> / custom` are that mode's time over the C kernels'.", render_generic,
              "The C forward reads each row once for its sum of squares and once more to write it (16 partial "
              "sums, so the loop vectorises without reassociating one long sum); its backward is one row pass "
              "for the input gradient and one pass in blocks of 64 columns for the weight gradient. The kernel "
              "language's forward is the compiled path's row kernel; its backward is the body's "
              "vector-Jacobian product, fused, which recomputes the row statistic."),
    Benchmark("profiler", "bench_profiler.py", "Profiler cost",
              "What `torch.profiler` with kiln's activity (`ProfilerActivity.PrivateUse1`) costs "
              "([profiler](design/profiler.md)): a loop of tiny ops and a small model's training step, with the "
              "profiler never started (`never`), started and stopped before the timed loop (`off`), and on "
              "around it (`on`), each mode in its own process. Unlike the page's other ratios, off / never and on / "
              "never are time over time: above 1.0x the profiler costs that much. Target: off costs nothing "
              "measurable.",
              render_profiler,
              "Off, a stream reads one relaxed atomic flag per piece of work and the allocator one per "
              "allocation; the ratios off / never are within the noise of single processes on this VM. On, "
              "most of the cost of a tiny op is torch.profiler's own recording of the host op; the device "
              "activity adds two clock reads and a buffer append."),
    Benchmark("import", "bench_import.py", "Import time",
              "What Kiln's autoload adds to `import torch`: the statement timed in fresh interpreters with "
              "`TORCH_DEVICE_BACKEND_AUTOLOAD=1` (the default) and `=0`, the two alternating round by round; "
              "then `python -X importtime` over torch_kiln's modules.", render_import),
]


INTRO = """\
# Performance

<!-- Generated by bench/render_performance.py from bench/results/*.json. Do not edit by hand:
`make bench` measures and re-renders, `make performance` re-renders from the JSON there. -->

Where Kiln stands now: the current figure of each benchmark in `bench/`, one section each, stamped with
the command, commit, date and machine of the run that measured it; earlier figures live in git history.
Every ratio is the baseline's time over Kiln's (for copies and collectives, Kiln's bandwidth over the
baseline's), both measured in the same run: above 1.0x Kiln is faster. How the benchmarks run, how
noisy their figures are and how to regenerate this page: [reference/benchmarks.md](reference/benchmarks.md).
"""


def summary_table(present):
    rows = []
    for benchmark, fields in present:
        measured, commit = fields.get("date", "not recorded"), f"`{fields.get('commit', 'not recorded')}`"
        update = last_update(fields)
        if update:  # part of the figures come from a later re-run
            measured += f", updated {update[0]}"
            commit += f", `{update[1]}`"
        rows.append([f"[{benchmark.title}](#{anchor(benchmark.title)})", f"`bench/{benchmark.script}`",
                     measured, commit])
    return table(["benchmark", "script", "measured", "commit"], rows)


def anchor(title):
    """GitHub's anchor of a heading."""
    kept = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def load_json(path):
    """(header fields, args, results, the whole JSON) of one results file; a JSON
    without the header wrapper (written before the scripts recorded one) is all results."""
    with open(path) as file:
        data = json.load(file)
    if isinstance(data, dict) and "results" in data:
        return parse_header(data.get("header")), data.get("args") or {}, data["results"], data
    return {}, {}, data, {}


def render_section(benchmark, path):
    fields, args, results, data = load_json(path)
    lines = [f"## {benchmark.title}", "", f"`bench/{benchmark.script}`: {benchmark.measures}", ""]
    lines += stamp(benchmark.name, fields) + [""]
    try:
        if benchmark.render in (render_native_ops, render_suite, render_adaptive_suite, render_moe_suite):
            body = benchmark.render(results, args, data)
        else:
            body = benchmark.render(results, args)
        if benchmark.reading:
            body = body + ["", f"Reading: {benchmark.reading}"]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        # The JSON is not the shape this script knows (the benchmark changed since):
        # its figures still go on the page, as a plain table.
        body = [f"*(Rendered as a plain table: the JSON is not in the shape bench/render_performance.py "
                f"expects, {type(error).__name__}: {error}.)*", ""] + render_generic(results, args)
    return lines + body, fields


def folder_name(folder):
    """The folder as the page names it: relative to the repository when inside it."""
    relative = os.path.relpath(os.path.abspath(folder), REPOSITORY)
    return folder if relative.startswith("..") else relative + "/"


def render(results_folder):
    """The page's text, from the JSON files in `results_folder`; also the names
    of the benchmarks with no JSON there."""
    known = {benchmark.name for benchmark in BENCHMARKS}
    files = sorted(name[:-len(".json")] for name in os.listdir(results_folder)
                   if name.endswith(".json")) if os.path.isdir(results_folder) else []
    benchmarks = [benchmark for benchmark in BENCHMARKS if benchmark.name in files]
    for name in files:
        if name not in known:  # a benchmark this script has no entry for: rendered as it comes
            benchmarks.append(Benchmark(name, f"bench_{name}.py", name, "(no description in "
                                        "bench/render_performance.py)", render_generic))
    missing = [benchmark for benchmark in BENCHMARKS if benchmark.name not in files]
    sections, present = [], []
    for benchmark in benchmarks:
        path = os.path.join(results_folder, benchmark.name + ".json")
        try:
            section, fields = render_section(benchmark, path)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            section, fields = [f"## {benchmark.title}", "",
                               f"`{benchmark.name}.json` could not be rendered: {type(error).__name__}: {error}"], {}
        sections.append(section)
        present.append((benchmark, fields))
    lines = INTRO.splitlines() + [""]
    if present:
        lines += summary_table(present) + [""]
    if missing:
        lines += [f"Not measured (no JSON in `{folder_name(results_folder)}`): " + ", ".join(
            f"`bench/{benchmark.script}` ({benchmark.name}.json)" for benchmark in missing) + ".", ""]
    for section in sections:
        lines += section + [""]
    return "\n".join(lines).rstrip("\n") + "\n", [benchmark.name for benchmark in missing]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=DEFAULT_RESULTS, help="folder of <benchmark>.json files")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help="the page to write ('-': stdout)")
    arguments = parser.parse_args(argv)
    page, missing = render(arguments.results)
    if arguments.output == "-":
        sys.stdout.write(page)
    else:
        with open(arguments.output, "w") as file:
            file.write(page)
        print(f"wrote {arguments.output}")
    if missing:
        print(f"no JSON in {arguments.results} for: {', '.join(missing)} (listed on the page as not measured)",
              file=sys.stderr)


if __name__ == "__main__":
    main()
