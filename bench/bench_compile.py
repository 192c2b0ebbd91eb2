#!/usr/bin/env python
"""torch.compile(model, backend="kiln") beside kiln eager, PyTorch's CPU eager
and CPU Inductor, in one run (issue 5).

Modes: cpu-eager; cpu-inductor (torch.compile(model), the default backend, on
the CPU); kiln-eager (the model on device "kiln"); kiln-compiled
(torch.compile(model, backend="kiln") on "kiln"). Only the model's forward is
compiled, with dynamic=False; loss, backward and optimizer stay eager, as in
torch_kiln.models.Training. Every mode is measured by the same functions.

- steady state: median and IQR, over --steps steps, of a training step and of
  the forward alone (eval mode, torch.no_grad(), one fixed batch), after
  warm-up steps that include the compile; each step ends with the device idle.
  Targets: inductor / kiln-compiled >= 1.0, kiln-eager / kiln-compiled > 1.
- first step: seconds of the very first training step in a fresh process
  (model, optimizer, compile and step; torch._dynamo is imported before the
  clock starts, as every mode's optimizer imports it), with empty caches: a
  temporary KILN_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR per model and mode;
  then in a second process on the same, now warm, folders.
  Target: inductor / kiln-compiled (cold) >= 1.0.
- pointwise chain: sixteen distinct cheap pointwise ops on 4M float32
  elements in one function; milliseconds per call, and the largest difference
  from cpu-eager's result. Target: kiln-eager / kiln-compiled >= 4.

A mode whose compile backend is not registered is reported as such; a mode
that fails is reported with its error; the others go on. Nothing is asserted.

    python bench/bench_compile.py [--steps 20] [--models mlp,cnn,transformer]
        [--modes cpu-eager,cpu-inductor,kiln-eager,kiln-compiled] [--skip-cold]
        [--json out.json]
"""
import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch._dynamo

from run_info import header

import torch_kiln
from torch_kiln.models import MODELS, Training

WARM_UP_STEPS = 3
SETTLE_SECONDS = 0.05
CHAIN_ELEMENTS = 4 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Mode:
    device: str
    backend: str = None  # torch.compile backend; None runs eagerly


MODES = {
    "cpu-eager": Mode("cpu"),
    "cpu-inductor": Mode("cpu", "inductor"),
    "kiln-eager": Mode("kiln"),
    "kiln-compiled": Mode("kiln", "kiln"),
}


def unavailable(mode):
    """Why `mode` cannot run in this process, or None when it can."""
    if mode.backend and mode.backend not in torch._dynamo.list_backends(exclude_tags=()):
        return (f"torch.compile backend {mode.backend!r} is not registered "
                f"(torch._dynamo.list_backends() lacks it)")
    return None


def prepare(mode, function):
    """`function` (a module or a plain function) as `mode` runs it: itself
    when eager, else wrapped by torch.compile with the mode's backend. Compiled
    code of an earlier mode is dropped first, so no mode reuses another's."""
    if mode.backend is None:
        return function
    torch._dynamo.reset()
    return torch.compile(function, backend=mode.backend, dynamic=False)


def make_training(spec, mode):
    """spec's Training on mode's device; the model is compiled after Training
    moved it there. The compiled wrapper shares the model's parameters, so the
    optimizer Training made still updates what the compiled forward reads."""
    training = Training(spec, mode.device)
    training.model = prepare(mode, training.model)
    return training


def synchronize(device):
    if device == "kiln":
        torch.kiln.synchronize()


def timed_calls(call, device, steps):
    """Seconds of each of `steps` calls, after WARM_UP_STEPS calls (which run
    any compile). Each call ends when the device is idle."""
    for _ in range(WARM_UP_STEPS):
        call()
    synchronize(device)
    # OpenMP workers of the previous mode spin for a while after their last
    # op; let them stop before this mode takes the cores.
    time.sleep(SETTLE_SECONDS)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        call()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return times


def summary(times):
    """Median and interquartile range, in seconds."""
    quartiles = statistics.quantiles(times, n=4, method="inclusive")
    return {"median_s": statistics.median(times), "iqr_s": quartiles[2] - quartiles[0]}


def steady_state(spec, mode, steps):
    """Training step, then inference forward, of one model in one mode."""
    training = make_training(spec, mode)
    train = summary(timed_calls(training.step, mode.device, steps))
    training.model.eval()
    inputs = spec.make_batch(torch.Generator().manual_seed(7))[0].to(mode.device)

    def infer():
        with torch.no_grad():
            return training.model(inputs)

    return {"train": train, "inference": summary(timed_calls(infer, mode.device, steps))}


def first_step(name, mode_name):
    """The first training step of this process (run in a fresh one)."""
    mode = MODES[mode_name]
    torch_kiln.reset_compiler_stats()
    start = time.perf_counter()
    training = make_training(MODELS[name], mode)
    training.step()
    synchronize(mode.device)
    return {"seconds": time.perf_counter() - start, **torch_kiln.compiler_stats()}


def first_step_in_fresh_process(name, mode_name, kiln_cache, inductor_cache):
    env = dict(os.environ, KILN_CACHE_DIR=kiln_cache, TORCHINDUCTOR_CACHE_DIR=inductor_cache,
               KILN_FALLBACK="silent")
    command = [sys.executable, os.path.abspath(__file__), "--first-step-of", name, mode_name]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or [f"exit status {result.returncode}"]
        return {"error": lines[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def cold_and_warm(name, mode_name):
    with tempfile.TemporaryDirectory(prefix="kiln-bench-compile-") as folder:
        caches = (os.path.join(folder, "kiln"), os.path.join(folder, "inductor"))
        cold = first_step_in_fresh_process(name, mode_name, *caches)
        warm = first_step_in_fresh_process(name, mode_name, *caches)
    return {"cold": cold, "warm": warm}


def pointwise_chain(x):
    """Sixteen distinct cheap pointwise ops; values stay finite."""
    y = x * 1.5
    y = y + 0.25
    y = torch.sin(y)
    y = y * x
    y = y - 0.5
    y = torch.abs(y)
    y = y + 1.0
    y = torch.sqrt(y)
    y = torch.tanh(y)
    y = y / 1.75
    y = torch.exp(y)
    y = torch.neg(y)
    y = torch.sigmoid(y)
    y = torch.cos(y)
    y = torch.maximum(y, x)
    return torch.clamp(y, -0.75, 0.75)


def chain(mode, steps, reference):
    """Time per call of the chain, and its largest difference from `reference`."""
    x = torch.rand(CHAIN_ELEMENTS, generator=torch.Generator().manual_seed(3)) * 2 - 1
    x = x.to(mode.device)
    function = prepare(mode, pointwise_chain)
    times = timed_calls(lambda: function(x), mode.device, steps)
    difference = (function(x).cpu() - reference).abs().max().item()
    return {**summary(times), "max_abs_difference": difference}


def measured(function, *args):
    """function(*args), or {"error": ...} when it raises: one mode's failure
    must not stop the others."""
    try:
        return function(*args)
    except Exception as error:  # noqa: BLE001 - reported, then the run goes on
        first_line = (str(error).strip().splitlines() or [""])[0]
        return {"error": f"{type(error).__name__}: {first_line}"}


def milliseconds(entry):
    if "error" in entry:
        return "error"
    return f"{entry['median_s'] * 1e3:.2f} ±{entry['iqr_s'] * 1e3:.2f}"


def ratio(figures, numerator, denominator, field):
    """figures[numerator][field] / figures[denominator][field], or None."""
    try:
        return figures[numerator][field] / figures[denominator][field]
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def ratio_text(value):
    return "n/a" if value is None else f"{value:.2f}x"


def print_errors(table):
    for key, entry in table.items():
        if isinstance(entry, dict) and "error" in entry:
            print(f"  {key}: {entry['error']}")


def run_steady_state(names, modes, steps, figures):
    print(f"\nsteady state (ms, median ±IQR of {steps}; after {WARM_UP_STEPS} warm-up steps)")
    print(f"{'model':<13}{'mode':<15}{'train step':>18}{'inference':>18}")
    errors = {}
    for name in names:
        rows = figures.setdefault(name, {}).setdefault("steady", {})
        for mode_name, mode in modes.items():
            result = measured(steady_state, MODELS[name], mode, steps)
            rows[mode_name] = result
            if "error" in result:
                errors[f"{name} {mode_name}"] = result
                train = inference = "error"
            else:
                train, inference = milliseconds(result["train"]), milliseconds(result["inference"])
            print(f"{name:<13}{mode_name:<15}{train:>18}{inference:>18}")
    print_errors(errors)
    print("\nratios of steady-state medians (train / inference)")
    print(f"{'model':<13}{'inductor / kiln-compiled (>= 1.0)':>36}{'kiln-eager / kiln-compiled (> 1)':>36}")
    for name in names:
        rows = figures[name]["steady"]
        pairs = []
        for other in ("cpu-inductor", "kiln-eager"):
            parts = [ratio({mode: rows.get(mode, {}).get(kind, {}) for mode in rows},
                           other, "kiln-compiled", "median_s") for kind in ("train", "inference")]
            pairs.append(" / ".join(ratio_text(part) for part in parts))
        print(f"{name:<13}{pairs[0]:>36}{pairs[1]:>36}")


def run_first_steps(names, mode_names, figures):
    print("\nfirst training step in a fresh process (s): cold = empty kiln and inductor caches,")
    print("warm = a second process on the same folders")
    print(f"{'model':<13}{'mode':<15}{'cold s':>9}{'warm s':>9}{'kernels':>9}{'compile s':>11}")
    errors = {}
    for name in names:
        rows = figures.setdefault(name, {}).setdefault("first_step", {})
        for mode_name in mode_names:
            rows[mode_name] = result = cold_and_warm(name, mode_name)
            cold, warm = result["cold"], result["warm"]
            for which, entry in (("cold", cold), ("warm", warm)):
                if "error" in entry:
                    errors[f"{name} {mode_name} {which}"] = entry
            cells = ["error" if "error" in entry else f"{entry['seconds']:.2f}" for entry in (cold, warm)]
            kernels = "-" if "error" in cold else str(cold["kernels_compiled"])
            compile_seconds = "-" if "error" in cold else f"{cold['compile_seconds']:.2f}"
            print(f"{name:<13}{mode_name:<15}{cells[0]:>9}{cells[1]:>9}{kernels:>9}{compile_seconds:>11}")
    print_errors(errors)
    print(f"\n{'model':<13}{'cold: inductor / kiln-compiled (>= 1.0)':>42}{'warm':>10}")
    for name in names:
        rows = figures[name]["first_step"]
        parts = [ratio({mode: rows[mode][which] for mode in rows}, "cpu-inductor", "kiln-compiled",
                       "seconds") for which in ("cold", "warm")]
        print(f"{name:<13}{ratio_text(parts[0]):>42}{ratio_text(parts[1]):>10}")


def run_chain(modes, steps, figures):
    print(f"\npointwise chain: 16 ops on {CHAIN_ELEMENTS} float32 (ms per call, median ±IQR of {steps})")
    print(f"{'mode':<15}{'ms':>18}{'max |diff| vs cpu-eager':>26}")
    x = torch.rand(CHAIN_ELEMENTS, generator=torch.Generator().manual_seed(3)) * 2 - 1
    reference = pointwise_chain(x)
    rows = figures.setdefault("chain", {})
    for mode_name, mode in modes.items():
        rows[mode_name] = result = measured(chain, mode, steps, reference)
        difference = "-" if "error" in result else f"{result['max_abs_difference']:.2e}"
        print(f"{mode_name:<15}{milliseconds(result):>18}{difference:>26}")
    print_errors(rows)
    print(f"kiln-eager / kiln-compiled (target >= 4): "
          f"{ratio_text(ratio(rows, 'kiln-eager', 'kiln-compiled', 'median_s'))}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--skip-cold", action="store_true", help="skip the first-step processes")
    parser.add_argument("--json", help="write the figures here as JSON")
    parser.add_argument("--first-step-of", nargs=2, metavar=("MODEL", "MODE"),
                        help=argparse.SUPPRESS)  # the fresh process of the first-step figures
    args = parser.parse_args()
    if args.first_step_of:
        print(json.dumps(first_step(*args.first_step_of)))
        return
    names = args.models.split(",")
    for name in names:
        if name not in MODELS:
            parser.error(f"unknown model {name!r}; expected some of {', '.join(MODELS)}")
    mode_names = args.modes.split(",")
    for mode_name in mode_names:
        if mode_name not in MODES:
            parser.error(f"unknown mode {mode_name!r}; expected some of {', '.join(MODES)}")

    print("\n".join(header(sys.argv)))
    figures = {"unavailable": {}}
    modes = {}
    for mode_name in mode_names:
        reason = unavailable(MODES[mode_name])
        if reason:
            figures["unavailable"][mode_name] = reason
            print(f"mode    : {mode_name} skipped: {reason}")
        else:
            modes[mode_name] = MODES[mode_name]

    run_steady_state(names, modes, args.steps, figures)
    if not args.skip_cold:
        run_first_steps(names, list(modes), figures)
    run_chain(modes, args.steps, figures)
    if args.json:
        with open(args.json, "w") as output:
            json.dump(figures, output, indent=2)


if __name__ == "__main__":
    main()
