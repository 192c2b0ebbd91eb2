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

    @property
    def has_cache(self):
        """Whether a first step can find anything on disk from an earlier process."""
        return self.device == "kiln" or self.backend is not None


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


def dynamo_counts():
    """(graphs Dynamo compiled, graph breaks) so far in this process."""
    counters = torch._dynamo.utils.counters
    return counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())


def timed_calls(call, device, steps):
    """Median and IQR (seconds) of `steps` calls, after WARM_UP_STEPS calls
    (which run any compile), and the graphs compiled while timed (a recompile
    there would be timed as a step: it should be 0). Each call ends when the
    device is idle."""
    for _ in range(WARM_UP_STEPS):
        call()
    synchronize(device)
    # OpenMP workers of the previous mode spin for a while after their last
    # op; let them stop before this mode takes the cores.
    time.sleep(SETTLE_SECONDS)
    graphs_before = dynamo_counts()[0]
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        call()
        synchronize(device)
        times.append(time.perf_counter() - start)
    quartiles = statistics.quantiles(times, n=4, method="inclusive")
    return {"median_s": statistics.median(times), "iqr_s": quartiles[2] - quartiles[0],
            "graphs_compiled_while_timed": dynamo_counts()[0] - graphs_before}


def steady_state(spec, mode, steps):
    """Training step, then inference forward, of one model in one mode, with
    the graphs and graph breaks Dynamo made for it."""
    graphs, breaks = dynamo_counts()
    training = make_training(spec, mode)
    train = timed_calls(training.step, mode.device, steps)
    training.model.eval()
    inputs = spec.make_batch(torch.Generator().manual_seed(7))[0].to(mode.device)

    def infer():
        with torch.no_grad():
            return training.model(inputs)

    inference = timed_calls(infer, mode.device, steps)
    graphs_after, breaks_after = dynamo_counts()
    return {"train": train, "inference": inference,
            "graphs": graphs_after - graphs, "graph_breaks": breaks_after - breaks}


def first_step(name, mode_name):
    """The first training step of this process (run in a fresh one)."""
    mode = MODES[mode_name]
    torch_kiln.reset_compiler_stats()
    start = time.perf_counter()
    training = make_training(MODELS[name], mode)
    training.step()
    synchronize(mode.device)
    seconds = time.perf_counter() - start
    # The kernel cache's counters (every kiln mode), and the compiled path's.
    return {"seconds": seconds, **torch_kiln.compiler_stats(),
            "compiled_path": torch_kiln.compile_stats() if mode.backend == "kiln" else None}


def first_step_in_fresh_process(name, mode_name, kiln_cache, inductor_cache):
    env = dict(os.environ, KILN_CACHE_DIR=kiln_cache, TORCHINDUCTOR_CACHE_DIR=inductor_cache,
               KILN_FALLBACK="silent")
    command = [sys.executable, os.path.abspath(__file__), "--first-step-of", name, mode_name]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:  # it died before it could report (an error is reported)
        lines = result.stderr.strip().splitlines() or [f"exit status {result.returncode}"]
        return {"error": lines[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def cold_and_warm(name, mode_name):
    """First steps with empty caches, then warm ones; a mode without a cache
    (cpu-eager) has no warm run: it would only measure the same again."""
    with tempfile.TemporaryDirectory(prefix="kiln-bench-compile-") as folder:
        caches = (os.path.join(folder, "kiln"), os.path.join(folder, "inductor"))
        result = {"cold": first_step_in_fresh_process(name, mode_name, *caches)}
        if MODES[mode_name].has_cache:
            result["warm"] = first_step_in_fresh_process(name, mode_name, *caches)
    return result


def pointwise_chain(x):
    """Sixteen distinct cheap pointwise ops, each a pass over memory in
    eager mode: fusion's gain. (No sine, tangent or logarithm: their
    arithmetic, not memory, would bound the fused kernel, and the ratio would
    measure the math library.) For x in [-1, 1] the values stay finite and
    spread, so the comparison with cpu-eager's result can catch a wrong one."""
    y = x * 1.5
    y = y + 0.25
    y = torch.square(y)
    y = y - x
    y = torch.abs(y)
    y = y / 4.0
    y = torch.neg(y)
    y = torch.exp(y)
    y = torch.addcmul(y, y, x, value=0.5)
    y = torch.sigmoid(y)
    y = torch.maximum(y, x)
    y = torch.rsqrt(y)
    y = torch.lerp(y, x, 0.3)
    y = torch.reciprocal(y)
    y = torch.copysign(y, x)
    return torch.clamp(y, -1.55, 1.2)


def chain(mode, steps, reference):
    """Time per call of the chain, and its largest difference from `reference`."""
    x = torch.rand(CHAIN_ELEMENTS, generator=torch.Generator().manual_seed(3)) * 2 - 1
    x = x.to(mode.device)
    function = prepare(mode, pointwise_chain)
    result = timed_calls(lambda: function(x), mode.device, steps)
    return {**result, "max_abs_difference": (function(x).cpu() - reference).abs().max().item()}


def measured(function, *args):
    """function(*args), or {"error": ...} when it raises: one mode's failure
    must not stop the others. The error keeps the message's first paragraph,
    as Dynamo puts the backend's own error on the line after its own."""
    try:
        return function(*args)
    except Exception as error:  # noqa: BLE001 - reported, then the run goes on
        paragraph = str(error).strip().split("\n\n")[0]
        text = " ".join(line.strip() for line in paragraph.splitlines())
        return {"error": f"{type(error).__name__}: {text[:400]}"}


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
    print("graphs, breaks = graphs Dynamo compiled for the mode (train and inference), graph breaks")
    print(f"{'model':<13}{'mode':<15}{'train step':>18}{'inference':>18}{'graphs':>8}{'breaks':>8}")
    errors = {}
    for name in names:
        rows = figures.setdefault(name, {}).setdefault("steady", {})
        for mode_name, mode in modes.items():
            rows[mode_name] = result = measured(steady_state, MODELS[name], mode, steps)
            cells = ["error"] * 2 + ["-"] * 2
            if "error" in result:
                errors[f"{name} {mode_name}"] = result
            else:
                cells[:2] = milliseconds(result["train"]), milliseconds(result["inference"])
                if mode.backend:
                    cells[2:] = str(result["graphs"]), str(result["graph_breaks"])
                for kind in ("train", "inference"):
                    if result[kind]["graphs_compiled_while_timed"]:
                        errors[f"{name} {mode_name} {kind}"] = {"error": "recompiled while timed"}
            print(f"{name:<13}{mode_name:<15}{cells[0]:>18}{cells[1]:>18}{cells[2]:>8}{cells[3]:>8}")
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


def first_step_cell(entry):
    if entry is None:
        return "-"
    return "error" if "error" in entry else f"{entry['seconds']:.2f}"


def run_first_steps(names, mode_names, figures):
    print("\nfirst training step in a fresh process (s): cold = empty kiln and inductor caches,")
    print("warm = a second process on the same folders (none for cpu-eager: it has no cache);")
    print("kernels, compile s = kiln's kernel compiler in the cold process")
    print(f"{'model':<13}{'mode':<15}{'cold s':>9}{'warm s':>9}{'kernels':>9}{'compile s':>11}")
    errors = {}
    for name in names:
        rows = figures.setdefault(name, {}).setdefault("first_step", {})
        for mode_name in mode_names:
            rows[mode_name] = result = cold_and_warm(name, mode_name)
            for which, entry in result.items():
                if "error" in entry:
                    errors[f"{name} {mode_name} {which}"] = entry
            cells = [first_step_cell(result.get(which)) for which in ("cold", "warm")]
            cold = result["cold"]
            # kiln's kernel compiler counters: nothing to show for a CPU mode.
            counted = "error" not in cold and MODES[mode_name].device == "kiln"
            kernels = str(cold["kernels_compiled"]) if counted else "-"
            compile_seconds = f"{cold['compile_seconds']:.2f}" if counted else "-"
            print(f"{name:<13}{mode_name:<15}{cells[0]:>9}{cells[1]:>9}{kernels:>9}{compile_seconds:>11}")
    print_errors(errors)
    print(f"\n{'model':<13}{'cold: inductor / kiln-compiled (>= 1.0)':>42}{'warm':>10}")
    for name in names:
        rows = figures[name]["first_step"]
        parts = [ratio({mode: rows[mode].get(which) for mode in rows}, "cpu-inductor", "kiln-compiled",
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
    for mode_name, result in rows.items():
        if result.get("graphs_compiled_while_timed"):
            print(f"  {mode_name}: recompiled while timed")
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
        print(json.dumps(measured(first_step, *args.first_step_of)))
        return
    if args.steps < 2:
        parser.error("--steps must be at least 2 (the IQR needs two samples)")
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

    sections = [("steady state", run_steady_state, (names, modes, args.steps, figures))]
    if not args.skip_cold:
        sections.append(("first step", run_first_steps, (names, list(modes), figures)))
    sections.append(("pointwise chain", run_chain, (modes, args.steps, figures)))
    figures["section_seconds"] = {}
    for title, function, arguments in sections:
        start = time.perf_counter()
        function(*arguments)
        figures["section_seconds"][title] = seconds = time.perf_counter() - start
        print(f"({title}: {seconds:.0f} s)")
    if args.json:
        with open(args.json, "w") as output:
            json.dump(figures, output, indent=2)


if __name__ == "__main__":
    main()
