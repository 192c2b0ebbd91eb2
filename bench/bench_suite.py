#!/usr/bin/env python
"""Kiln's model suites: real models (bench/suite_models.py) in four modes,
each run in its own process, for training and inference, as PyTorch's
compiler dashboard runs its suites.

Modes: cpu_eager (the reference), inductor (torch.compile on the CPU),
kiln_eager (model.to("kiln")) and kiln_compiled (torch.compile(model,
backend="kiln")), all with dynamic=False. A training step is forward, loss,
backward and AdamW's update; an inference step is the forward and loss under
no_grad. Each step ends with the device idle.

For every (model, task, mode) the runner records: whether it ran (or the
first line of its error), the ops that fell back to the CPU, the first step's
time (compilation included), the median of the timed steps (at least
--steps, and as many more as fit in --seconds, after at least --warmup
untimed ones and a quarter of --seconds: a 1 ms step is timed hundreds of
times, so its median does not move with one slow step; kiln eager's warm-up
also goes on, for up to a minute, until adaptive eager's background compiles
are done, and records when they were: compiles_settled_s from the first
step's start, and the step), and the peak
resident memory over the process's resident memory once the model and its
inputs are on their device (kiln's memory is host memory, so all four modes
are measured the same way: what the steps need beyond the model itself,
activations, gradients, optimizer state, workspaces and caches; the CPU copy
of the weights that .to("kiln") frees is handed back to the system first).
The first step's loss, outputs and gradients are compared with
cpu_eager's and with a float64 run of the CPU (cpu_float64, a process of
its own), as PyTorch's dashboard judges accuracy (torch._dynamo.utils.same
with fp64_ref): loss and outputs pass within kiln-eval's tolerances
(torch_kiln.eval.numerics) or when their error against float64 is at most
3x cpu_eager's own (root mean square); the gradients, taken as one vector,
when their relative error against float64 is at most 3x cpu_eager's or
0.1 % (compare_numerics says why not tensor by tensor). Where only the
gradients miss, the mode runs again in float64 (<mode>_float64, a process of
its own), and passes if every tensor matches the CPU's float64 run under
kiln-eval's float64 tolerances: a ReLU whose input is a rounding error away
from 0 flips one way on one device and the other way on another, and only a
float64 run tells that from a wrong kernel. A mode passes when it ran,
nothing fell back, and every check passed.
With --rounds N, each mode that ran is timed again in N - 1 more processes
(the modes in rotating order) and its step time is the median over the N:
on a shared machine a whole process can run a third slower than the next,
which one process per mode cannot tell from a real difference.
Dropout and stochastic depth are off so that every mode computes the same
function.

    python bench/bench_suite.py [--models all|ci|<suite>|<model>,...] [--tasks train,infer]
        [--modes cpu_eager,inductor,kiln_eager,kiln_compiled] [--warmup 2] [--steps 5] [--seconds 1]
        [--rounds 1] [--timeout 900] [--json bench/results/suite.json]

bench/render_models.py turns the JSON into docs/models.md.
"""
import argparse
import ctypes
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
MODES = ("cpu_eager", "inductor", "kiln_eager", "kiln_compiled")
# Modes a run may name beside those: kiln eager with adaptive eager off
# (KILN_ADAPTIVE_EAGER=0), what adaptive eager is measured against.
EXTRA_MODES = ("kiln_eager_unfused",)
REFERENCE = "cpu_eager_float64"  # the CPU in float64: what numerics are measured against
FLOAT64 = "_float64"  # a mode's name with this suffix: that mode in float64, numerics only
FLOAT64_MULTIPLIER = 3.0
GRADIENT_TOLERANCE = 1e-3  # relative error of the whole gradient that always passes
TASKS = ("train", "infer")
MAX_STEPS = 1000  # timed (and untimed warm-up) steps at most, however short
COMPILE_SETTLE_S = 60  # untimed steps while adaptive eager's fused kernels compile, at most this long


# ------------------------------------------------------------ one process

def _status_kib(field):
    """A memory figure of this process from /proc/self/status (VmRSS, VmHWM)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _release_freed_memory():
    """Hands the memory freed so far back to the system (glibc's malloc_trim),
    so that resident memory counts only what is in use."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the figure may read high
        pass


def _reset_peak_resident():
    """Starts VmHWM (the peak resident memory) again from the current
    resident memory (Linux 4.0 and later), so that the peak measured is the
    run's, not that of the imports before it (transformers' alone is ~400 MB)."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


def _to(value, device):
    return value.to(device) if hasattr(value, "to") else value


def run_child(name, mode, task, warmup, steps, seconds, numerics_path):
    """Runs one (model, task, mode); returns its record and saves the first
    step's loss, outputs and gradients (CPU tensors) to numerics_path."""
    import torch
    import suite_models
    from torch_kiln.eval.numerics import flatten_outputs
    float64 = mode.endswith(FLOAT64)
    mode = mode[:-len(FLOAT64)] if float64 else mode
    kiln = mode.startswith("kiln")
    if kiln:
        import torch_kiln
    workload = suite_models.build(name)
    device = "kiln" if kiln else "cpu"
    model = workload.model.to(device).train(task == "train")
    inputs = {key: _to(value, device) for key, value in workload.inputs.items()}
    if float64:
        model = model.double()
        if hasattr(model, "set_experts_implementation"):
            # torch._grouped_mm takes float32 and bfloat16 only: in float64 the
            # experts run as transformers' per-expert loop, the same function.
            model.set_experts_implementation("eager")
        inputs = {key: value.double() if torch.is_tensor(value) and value.is_floating_point() else value
                  for key, value in inputs.items()}
    _release_freed_memory()  # the CPU copy of the weights that .to("kiln") freed
    _reset_peak_resident()
    base_kib = _status_kib("VmRSS")
    runner = model
    if mode == "inductor":
        runner = torch.compile(model, dynamic=False)
    elif mode == "kiln_compiled":
        runner = torch.compile(model, backend="kiln", dynamic=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4) if task == "train" else None
    synchronize = torch.kiln.synchronize if kiln else (lambda: None)
    if kiln:
        torch_kiln.clear_op_tracking()

    def step():
        if optimizer is None:
            with torch.no_grad():
                output = runner(**inputs)
                loss = workload.loss(output, inputs)
        else:
            optimizer.zero_grad(set_to_none=True)
            output = runner(**inputs)
            loss = workload.loss(output, inputs)
            loss.backward()
            optimizer.step()
        synchronize()
        return output, loss

    # Adaptive eager's region keys seen after each of the first steps: a
    # key that appears after step 5 means compiles past the warm-up.
    region_keys = []

    # When no fused-kernel compile was pending any more: seconds from the
    # first step's start, and the step (1 is the first) after which.
    settled = {}
    steps_run = [0]

    def note_region_keys():
        if kiln and len(region_keys) < 8:
            region_keys.append(torch_kiln.adaptive_eager_stats()["region_keys"])
        if not settled and not compiles_pending():
            settled.update(s=time.perf_counter() - process_start, step=steps_run[0] + 1)
        steps_run[0] += 1

    def compiles_pending():
        return kiln and mode == "kiln_eager" and torch_kiln.adaptive_eager_stats()["compiles_pending"] > 0

    start = process_start = time.perf_counter()
    output, loss = step()
    first_step = time.perf_counter() - start
    note_region_keys()
    numerics = {"loss": loss.detach().cpu()}
    numerics.update({name: tensor.detach().cpu() for name, tensor in flatten_outputs(output)
                     if tensor.is_floating_point()})
    if optimizer is not None:
        numerics.update({f"grad {parameter}": value.grad.detach().cpu()
                         for parameter, value in model.named_parameters() if value.grad is not None})
    torch.save(numerics, numerics_path)
    del output, loss
    times = []
    if steps:
        # At least `warmup` untimed steps and a quarter of `seconds`; then at
        # least `steps` timed ones and `seconds` in all: a 1 ms inference step
        # is timed hundreds of times, a training step of a large model 5.
        warm_until = time.perf_counter() + seconds / 4
        done = 0
        while done < warmup or (time.perf_counter() < warm_until and done < MAX_STEPS):
            step()
            note_region_keys()
            done += 1
        # Adaptive eager compiles its fused kernels in the background; the
        # steps are timed once they are ready, as Inductor's are once its
        # first step has compiled (both costs are in first_step_s and
        # compiles_settled_s, not in step_s).
        settle_until = time.perf_counter() + COMPILE_SETTLE_S
        while compiles_pending() and time.perf_counter() < settle_until:
            step()
            note_region_keys()
            done += 1
        while len(times) < steps or (sum(times) < seconds and len(times) < MAX_STEPS):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
            note_region_keys()
    peak_kib = _status_kib("VmHWM")
    return {"status": "ran", "first_step_s": first_step, "step_s": statistics.median(times) if times else None,
            "peak_memory_mb": max(peak_kib - base_kib, 0) / 1024,
            "fallback_ops": sorted(torch_kiln.get_fallback_ops()) if kiln else [],
            "adaptive_eager": dict(torch_kiln.adaptive_eager_stats(), region_keys_by_step=region_keys,
                                   compiles_settled_s=settled.get("s"), compiles_settled_step=settled.get("step"))
            if kiln and mode == "kiln_eager" else None,
            "description": workload.description}


def child_main(args):
    sys.path.insert(0, BENCH)
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    try:
        record = run_child(args.child_model, args.child_mode, args.child_task, args.warmup, args.steps, args.seconds,
                           args.child_numerics)
    except Exception as error:  # the record says what failed; the parent goes on to the next
        lines = [line for line in str(error).strip().splitlines() if line.strip()]
        record = {"status": "failed", "error": f"{type(error).__name__}: {lines[0] if lines else ''}"[:400]}
    with open(args.child_record, "w") as output:
        json.dump(record, output)


# ------------------------------------------------------------ the parent

def run_process(name, mode, task, args, directory, timing_only=False):
    """Runs one (model, task, mode) in a process of its own; returns its
    record and the path of its numerics. A timing-only run (a later round)
    writes its files beside the first run's, not over them."""
    stem = f"{name}-{task}-{mode}" + ("-timing" if timing_only else "")
    numerics_path = os.path.join(directory, f"{stem}.pt")
    record_path = os.path.join(directory, f"{stem}.json")
    if os.path.exists(record_path):
        os.remove(record_path)  # an earlier round's: a crash now must not read as its result
    command = [sys.executable, os.path.abspath(__file__), "--child-model", name, "--child-mode", mode,
               "--child-task", task, "--child-numerics", numerics_path, "--child-record", record_path,
               "--threads", str(args.threads)]
    # The float64 reference gives its first step's numerics only.
    command += ["--warmup", "0", "--steps", "0"] if mode.endswith(FLOAT64) else [
        "--warmup", str(args.warmup), "--steps", str(args.steps), "--seconds", str(args.seconds)]
    env = dict(os.environ, KILN_FALLBACK="silent")
    if mode == "kiln_eager_unfused":
        env["KILN_ADAPTIVE_EAGER"] = "0"
    if args.cache_dir:
        env.setdefault("KILN_CACHE_DIR", os.path.join(args.cache_dir, "kiln"))
        env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(args.cache_dir, "inductor"))
    start = time.perf_counter()
    try:
        completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "error": f"timed out after {args.timeout} s"}, None
    if not os.path.exists(record_path):
        tail = [line for line in (completed.stderr or "").strip().splitlines() if line.strip()][-1:]
        return {"status": "failed", "error": f"process exited with {completed.returncode}: "
                                             f"{tail[0] if tail else ''}"[:400]}, None
    with open(record_path) as source:
        record = json.load(source)
    record["process_s"] = time.perf_counter() - start
    return record, (numerics_path if record["status"] == "ran" else None)


def _root_mean_square_error(actual, expected):
    import torch
    difference = (actual.double() - expected.double())[torch.isfinite(expected)]
    return difference.square().mean().sqrt().item() if difference.numel() else 0.0


def _gradient_error(gradients, reference):
    """|g - reference| / |reference| over all parameters' gradients as one vector."""
    import torch
    difference = sum((gradients[name].double() - value.double()).square().sum() for name, value in reference.items())
    norm = sum(value.double().square().sum() for value in reference.values())
    return math.sqrt(float(difference) / float(norm)) if float(norm) > 0 else math.sqrt(float(difference))


def compare_numerics(actual_path, expected_path, float64_path=None):
    """One mode's first step against cpu_eager's (see the module docstring).
    Loss and outputs tensor by tensor: within kiln-eval's tolerances of
    cpu_eager, or no further from the float64 run than 3x cpu_eager (root mean
    square). Gradients as one vector: their relative error against the
    float64 run at most 3x cpu_eager's, or GRADIENT_TOLERANCE. (A ReLU whose
    input is a rounding error away from 0 flips between runs; in a 2x2 layer
    one flip moves that layer's gradients by 0.1-1 %, whichever side the
    flip is on, so single gradient tensors cannot be judged alone.)"""
    import torch
    from torch_kiln.eval.numerics import compare
    actual, expected = torch.load(actual_path), torch.load(expected_path)
    exact = torch.load(float64_path) if float64_path and os.path.exists(float64_path) else {}
    checks = []
    for name, want in expected.items():
        if name.startswith("grad "):
            continue
        if name not in actual:
            checks.append({"name": name, "passed": False, "max_rel_error": math.inf, "note": "missing"})
            continue
        check = compare(name, "numerics", "", actual[name], want)
        if not check["passed"] and name in exact and actual[name].shape == want.shape:
            error = _root_mean_square_error(actual[name], exact[name])
            own = _root_mean_square_error(want, exact[name])
            check["float64_error_ratio"] = error / own if own > 0 else math.inf
            check["passed"] = error <= FLOAT64_MULTIPLIER * own
        checks.append(check)
    gradients = {name: value for name, value in expected.items() if name.startswith("grad ")}
    if gradients:
        check = {"name": "gradients", "passed": False, "max_rel_error": math.inf}
        if all(name in actual and actual[name].shape == value.shape for name, value in gradients.items()):
            reference = {name: exact[name] for name in gradients if name in exact}
            if len(reference) == len(gradients):
                error, own = _gradient_error(actual, reference), _gradient_error(gradients, reference)
                check["float64_error_ratio"] = error / own if own > 0 else math.inf
            else:
                error, own = _gradient_error(actual, gradients), 0.0
            check["max_rel_error"] = error
            check["passed"] = error <= max(FLOAT64_MULTIPLIER * own, GRADIENT_TOLERANCE)
        checks.append(check)
    worst = max(checks, key=lambda check: (not check["passed"], check["max_rel_error"]), default=None)
    summary = {"checks": len(checks), "failed": sum(not check["passed"] for check in checks)}
    if worst is not None:
        summary["worst"] = {key: worst[key] for key in ("name", "max_rel_error", "passed", "float64_error_ratio")
                            if key in worst}
    return summary


def only_gradients_failed(numerics):
    return numerics["failed"] == 1 and numerics["worst"]["name"] == "gradients"


def rerun_in_float64(name, mode, task, args, directory, numerics, exact):
    """The gradients of a float32 run that ran and matched but for its
    gradients: the same mode in float64 against the CPU's float64 run, tensor
    by tensor under kiln-eval's float64 tolerances. A rounding flip (a ReLU or
    max whose inputs tie to a rounding error) does not happen there; a wrong
    kernel still shows. Passing, the numerics pass with the reason noted."""
    import torch
    from torch_kiln.eval.numerics import compare
    record, path = run_process(name, mode + FLOAT64, task, args, directory)
    if path is None:
        numerics["float64_rerun"] = {"error": record.get("error")}
        return
    actual, expected = torch.load(path), torch.load(exact)
    checks = [compare(key, "numerics", "", actual[key], value) if key in actual else
              {"name": key, "passed": False, "max_rel_error": math.inf} for key, value in expected.items()]
    worst = max(checks, key=lambda check: (not check["passed"], check["max_rel_error"]))
    numerics["float64_rerun"] = {"checks": len(checks), "failed": sum(not check["passed"] for check in checks),
                                 "worst": {"name": worst["name"], "max_rel_error": worst["max_rel_error"]}}
    if numerics["float64_rerun"]["failed"] == 0:
        numerics["failed"] = 0
        numerics["note"] = ("float32 gradients off by a rounding flip: the float64 run matches the CPU's "
                            f"(relative error {worst['max_rel_error']:.1e})")


def time_more_rounds(name, task, records, args, directory):
    """Times the modes that ran in args.rounds - 1 more rounds of processes,
    the modes' order rotated each round, and makes each mode's step_s the
    median over its rounds (step_s_rounds keeps them all). On a shared
    machine one process may run a third slower than the next for its whole
    life; a single process per mode then decides a ratio by chance, and the
    rotation keeps one mode from always following the same neighbour."""
    timed = [mode for mode, record in records.items() if record.get("step_s")]
    if not timed:
        return
    for mode in timed:
        records[mode]["step_s_rounds"] = [records[mode]["step_s"]]
    for round_index in range(1, args.rounds):
        shift = round_index % len(timed)
        for mode in timed[shift:] + timed[:shift]:
            record, _ = run_process(name, mode, task, args, directory, timing_only=True)
            if record.get("step_s"):
                records[mode]["step_s_rounds"].append(record["step_s"])
    for mode in timed:
        rounds = records[mode]["step_s_rounds"]
        records[mode]["step_s"] = statistics.median(rounds)
        print(f"{name:<22}{task:<7}{mode:<15}      step_s over {len(rounds)} rounds: "
              + ", ".join(f"{value:.3g}" for value in rounds), flush=True)


def merge_into_earlier(earlier, results):
    """Puts the (model, task) records run now into an earlier run's results:
    a task not run now keeps its earlier records."""
    for name, entry in results.items():
        tasks_before = earlier.get(name, {}).get("tasks", {})
        earlier[name] = dict(entry, tasks=dict(tasks_before, **entry["tasks"]))


def passed(record):
    return (record.get("status") == "ran" and not record.get("fallback_ops")
            and (record.get("numerics") is None or record["numerics"]["failed"] == 0))


def geometric_mean(values):
    values = [value for value in values if value and value > 0 and math.isfinite(value)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def modes_in(results):
    """The modes some model ran in `results`, in MODES then EXTRA_MODES order:
    an --update run summarizes over these, the adaptive suite's
    kiln_eager_unfused included."""
    seen = {mode for entry in results.values() for records in entry["tasks"].values() for mode in records}
    return [mode for mode in MODES + EXTRA_MODES if mode in seen]


def summarize(results, models, tasks, modes):
    """Per suite and task: pass rate per mode, and geometric-mean speedups."""
    import suite_models
    summary = {}
    for suite in suite_models.SUITES:
        names = [name for name in models if suite_models.suite_of(name) == suite]
        if not names:
            continue
        for task in tasks:
            with_task = [name for name in names if task in results[name]["tasks"]]
            if not with_task:
                continue
            entry = {"models": len(with_task), "passed": {}}
            for mode in modes:
                entry["passed"][mode] = sum(passed(results[name]["tasks"][task].get(mode, {})) for name in with_task)

            def speedups(mode, baseline):
                ratios = []
                for name in with_task:
                    records = results[name]["tasks"][task]
                    if mode in records and baseline in records and passed(records[mode]) and \
                            records[baseline].get("step_s") and records[mode].get("step_s"):
                        ratios.append(records[baseline]["step_s"] / records[mode]["step_s"])
                return geometric_mean(ratios), len(ratios)

            for mode, baseline in (("kiln_eager", "cpu_eager"), ("kiln_compiled", "inductor"),
                                   ("kiln_compiled", "cpu_eager"), ("inductor", "cpu_eager"),
                                   ("kiln_eager_unfused", "cpu_eager"), ("kiln_eager", "kiln_eager_unfused")):
                if mode in modes and baseline in modes:
                    value, count = speedups(mode, baseline)
                    entry[f"{mode}_over_{baseline}"] = {"geomean": value, "models": count}
            summary[f"{suite} {task}"] = entry
    return summary


def parent_main(args):
    sys.path.insert(0, BENCH)
    import suite_models
    from run_info import commit, header
    models = suite_models.select(args.models)
    tasks = [task for task in args.tasks.split(",") if task]
    modes = [mode for mode in args.modes.split(",") if mode]
    for value, known, what in ((tasks, TASKS, "task"), (modes, MODES + EXTRA_MODES, "mode")):
        unknown = [item for item in value if item not in known]
        if unknown:
            raise SystemExit(f"unknown {what} {unknown}; known: {', '.join(known)}")
    if "cpu_eager" not in modes:
        modes = ["cpu_eager"] + modes  # the reference every other mode is compared with
    run_modes = [REFERENCE] + modes if len(modes) > 1 else modes
    lines = header(sys.argv)
    print("\n".join(lines), flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="kiln-suite-") as directory:
        for name in models:
            results[name] = {"suite": suite_models.suite_of(name), "tasks": {}}
            for task in tasks:
                records = {}
                for mode in run_modes:
                    record, numerics = run_process(name, mode, task, args, directory)
                    if mode == REFERENCE:
                        if record["status"] != "ran":
                            print(f"{name:<22}{task:<7}{mode:<15}      {record.get('error')}", flush=True)
                        continue
                    records[mode] = record
                    reference = os.path.join(directory, f"{name}-{task}-cpu_eager.pt")
                    exact = os.path.join(directory, f"{name}-{task}-{REFERENCE}.pt")
                    if numerics and mode != "cpu_eager" and not os.path.exists(reference):
                        # Nothing to compare with: not a pass.
                        record["numerics"] = {"checks": 0, "failed": 1,
                                              "worst": {"name": "no CPU eager reference (cpu_eager failed)"}}
                    if numerics and mode != "cpu_eager" and os.path.exists(reference):
                        record["numerics"] = compare_numerics(numerics, reference, exact)
                        if only_gradients_failed(record["numerics"]) and os.path.exists(exact):
                            rerun_in_float64(name, mode, task, args, directory, record["numerics"], exact)
                    results[name]["description"] = record.get("description", results[name].get("description"))
                    verdict = "pass" if passed(record) else "FAIL"
                    detail = record.get("error") or ", ".join(
                        f"{key} {record[key]:.3g}" for key in ("first_step_s", "step_s") if record.get(key))
                    if record.get("fallback_ops"):
                        detail += f"; fell back: {record['fallback_ops']}"
                    if record.get("numerics", {}).get("failed"):
                        detail += f"; numerics: {record['numerics']['worst']}"
                    print(f"{name:<22}{task:<7}{mode:<15}{verdict:<6}{detail}", flush=True)
                if args.rounds > 1 and args.steps:
                    time_more_rounds(name, task, records, args, directory)
                results[name]["tasks"][task] = records
    recorded_args = vars(args)
    if args.update:
        # The models run now replace theirs in an earlier run's JSON (a model
        # re-run after a fix); the summary is made again over all of them.
        with open(args.update) as source:
            earlier = json.load(source)
        merge_into_earlier(earlier["results"], results)
        results, models = earlier["results"], list(earlier["results"])
        lines = earlier["header"] + [f"update  : {' '.join(sys.argv)} at {time.strftime('%Y-%m-%dT%H:%M:%S%z')}"
                                     f" on commit {commit()}"]
        recorded_args = earlier["args"]
        args.json = args.json or args.update
        tasks = [task for task in TASKS if any(task in entry["tasks"] for entry in results.values())]
        modes = modes_in(results)
    summary = summarize(results, models, tasks, modes)
    for key, entry in summary.items():
        rates = ", ".join(f"{mode} {count}/{entry['models']}" for mode, count in entry["passed"].items())
        print(f"{key}: passed {rates}")
    if args.json:
        with open(args.json, "w") as output:
            json.dump({"header": lines, "args": recorded_args, "results": results, "summary": summary}, output,
                      indent=1)
    failures = sum(not passed(records[mode]) for entry in results.values() for records in entry["tasks"].values()
                   for mode in records)
    return 1 if failures and args.check else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="all", help="all, ci, a suite, or model names, comma-separated")
    parser.add_argument("--tasks", default="train,infer")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps after the first")
    parser.add_argument("--steps", type=int, default=5, help="timed steps, at least (0: correctness only)")
    parser.add_argument("--seconds", type=float, default=1.0,
                        help="time steps until they add up to this many seconds (at most %d steps)" % MAX_STEPS)
    parser.add_argument("--rounds", type=int, default=1,
                        help="time each mode in this many processes, in rotating order; step_s is their median")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads in every mode (0: default)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per process")
    parser.add_argument("--cache-dir", help="kernel and Inductor caches under this folder (default: the user's)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every mode of every model passed")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--update", help="an earlier run's JSON: the models run now replace theirs there, and "
                                         "the whole is written back (to --json, or to this file)")
    for name in ("model", "mode", "task", "numerics", "record"):
        parser.add_argument(f"--child-{name}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_model:
        return child_main(args)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
