#!/usr/bin/env python
"""torch.compile(model, backend="kiln") beside kiln eager, PyTorch's CPU eager
and CPU Inductor, in one run (issue 5).

Modes: cpu-eager; cpu-inductor (torch.compile(model), the default backend, on
the CPU); kiln-eager (the model on device "kiln"); kiln-compiled
(torch.compile(model, backend="kiln") on "kiln"); kiln-dynamo-floor
(inference only: torch.compile on "kiln" with a backend whose compiled
function runs nothing and returns the outputs it computed once, so its time is
Dynamo's own per-call cost: frame entry, guards, gathering the parameters and
calling the graph; kiln-eager's inference minus it is the time a compiled
program has to run in to tie kiln eager); and, only when named in
--modes, kiln-compiled-device-thread (kiln-compiled with backward on PyTorch's
autograd thread for the device, as KILN_AUTOGRAD_THREAD=device, instead of
Kiln's default, the calling thread). Only the model's forward is
compiled, with dynamic=False; loss, backward and optimizer stay eager, as in
torch_kiln.models.Training. Every mode is made by one function, prepare(),
and timed by one, side_by_side(), where the modes take turns.

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
- optimizer step: each model's optimizer (Adam, SGD with momentum, AdamW)
  stepping its parameters with fixed gradients; compiled modes compile
  optimizer.step itself (torch.compile(optimizer.step)), as PyTorch's
  compiled-optimizer recipe does. Microseconds per step. No target: it shows
  what compiling the foreach ops gains.
- pointwise chain: sixteen distinct cheap pointwise ops on 4M float32
  elements in one function; milliseconds per call, and the largest difference
  from cpu-eager's result. Target: kiln-eager / kiln-compiled >= 4.

A mode whose compile backend is not registered is reported as such; a mode
that fails is reported with its error; the others go on. Nothing is asserted.

    python bench/bench_compile.py [--steps 20] [--models mlp,cnn,transformer]
        [--modes cpu-eager,cpu-inductor,kiln-eager,kiln-compiled,kiln-dynamo-floor]
        [--skip-cold]
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
ROUNDS = 4
SETTLE_SECONDS = 0.05
CHAIN_ELEMENTS = 4 * 1024 * 1024
CHILD_TIMEOUT_SECONDS = 300  # a first step hung that long is reported, not waited for


@dataclasses.dataclass(frozen=True)
class Mode:
    device: str
    backend: str = None  # torch.compile backend; None runs eagerly
    # True runs backward on the autograd engine's thread for the device
    # (torch.autograd.set_multithreading_enabled(True)), not on the calling
    # thread, where Kiln runs it by default (KILN_AUTOGRAD_THREAD).
    device_autograd_thread: bool = False
    # True times inference only: the mode cannot train (kiln-dynamo-floor).
    inference_only: bool = False

    @property
    def has_cache(self):
        """Whether a first step can find anything on disk from an earlier process."""
        return self.device == "kiln" or self.backend is not None


MODES = {
    "cpu-eager": Mode("cpu"),
    "cpu-inductor": Mode("cpu", "inductor"),
    "kiln-eager": Mode("kiln"),
    "kiln-compiled": Mode("kiln", "kiln"),
    "kiln-dynamo-floor": Mode("kiln", "dynamo-floor", inference_only=True),
}
# Not run unless named in --modes: what PyTorch's autograd thread for the
# device would cost, which Kiln's default (backward on the calling thread) avoids.
EXTRA_MODES = {
    "kiln-compiled-device-thread": Mode("kiln", "kiln", device_autograd_thread=True),
}
ALL_MODES = {**MODES, **EXTRA_MODES}


def dynamo_floor(gm, example_inputs):
    """A torch.compile backend that computes the graph's outputs once, at
    compile time, and returns a function giving those back: what is left of a
    compiled call is Dynamo's own cost. Inference only (the outputs carry no
    autograd history, and never change)."""
    outputs = gm(*example_inputs)
    return lambda *arguments: outputs


LOCAL_BACKENDS = {"dynamo-floor": dynamo_floor}


def unavailable(mode):
    """Why `mode` cannot run in this process, or None when it can."""
    if mode.backend in LOCAL_BACKENDS:
        return None
    if mode.backend and mode.backend not in torch._dynamo.list_backends(exclude_tags=()):
        return (f"torch.compile backend {mode.backend!r} is not registered "
                f"(torch._dynamo.list_backends() lacks it)")
    return None


def prepare(mode, function):
    """`function` (a module or a plain function) as `mode` runs it: itself
    when eager, else wrapped by torch.compile with the mode's backend (Dynamo
    guards each compiled entry on its backend, so modes never share code)."""
    if mode.backend is None:
        return function
    return torch.compile(function, backend=LOCAL_BACKENDS.get(mode.backend, mode.backend), dynamic=False)


def make_training(spec, mode):
    """spec's Training on mode's device; the model is compiled after Training
    moved it there. The compiled wrapper shares the model's parameters, so the
    optimizer Training made still updates what the compiled forward reads."""
    training = Training(spec, mode.device)
    training.model = prepare(mode, training.model)
    return training


def training_step(spec, mode):
    """A training step of a fresh make_training(spec, mode), as mode runs it."""
    step = make_training(spec, mode).step
    if not mode.device_autograd_thread:
        return step

    def step_with_device_thread():
        with torch.autograd.set_multithreading_enabled(True):
            return step()
    return step_with_device_thread


def make_inference(spec, mode):
    """A forward of spec's model (eval mode, no_grad) on one fixed batch."""
    torch.manual_seed(0)
    model = prepare(mode, spec.make_model().to(mode.device).eval())
    inputs = spec.make_batch(torch.Generator().manual_seed(7))[0].to(mode.device)

    def infer():
        with torch.no_grad():
            return model(inputs)
    return infer


def make_optimizer_step(spec, mode):
    """A step of spec's optimizer over its model's parameters, whose
    gradients are fixed (drawn once): `optimizer.step`, compiled in the
    compiled modes."""
    torch.manual_seed(0)
    model = spec.make_model().to(mode.device)
    generator = torch.Generator().manual_seed(11)
    for parameter in model.parameters():
        parameter.grad = torch.randn(parameter.shape, generator=generator).to(mode.device)
    optimizer = spec.make_optimizer(model.parameters())
    return prepare(mode, optimizer.step)


def synchronize(device):
    if device == "kiln":
        torch.kiln.synchronize()


def dynamo_counts():
    """(graphs Dynamo compiled, graph breaks) so far in this process."""
    counters = torch._dynamo.utils.counters
    return counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())


def error_entry(error):
    """{"error": ...} for a failed mode. It keeps the message's first
    paragraph, as Dynamo puts the backend's own error on its second line."""
    paragraph = str(error).strip().split("\n\n")[0]
    text = " ".join(line.strip() for line in paragraph.splitlines())
    return {"error": f"{type(error).__name__}: {text[:400]}"}


def timed_round(call, device, count):
    """Seconds of `count` calls, each ending with the device idle."""
    # OpenMP workers of the mode timed before spin for a while after their
    # last op: let them stop; then one call brings the cores back to speed.
    time.sleep(SETTLE_SECONDS)
    call()
    synchronize(device)
    times = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return times


def side_by_side(makers, steps):
    """Times the call each mode's maker returns: {mode name: (mode, make)}.
    Every call is first run WARM_UP_STEPS times (any compile happens there),
    then the modes take turns, ROUNDS rounds of about steps / ROUNDS calls,
    so background load on a shared machine hits all of them alike; odd
    rounds run the modes in reverse order, as the mode timed right after
    another measured differently from the same mode timed first (the CNN's
    inference against Inductor: 0.78x one way round, 0.94x the other). Returns
    per mode the median and IQR (seconds), the graphs and graph breaks its
    warm-up made, or {"error": ...}; and the graphs compiled while timed (a
    recompile would be timed as a step: it should be 0)."""
    results, calls = {}, {}
    for mode_name, (mode, make) in makers.items():
        graphs, breaks = dynamo_counts()
        try:
            call = make()
            for _ in range(WARM_UP_STEPS):
                call()
            synchronize(mode.device)
        except Exception as error:  # noqa: BLE001 - reported; the other modes go on
            results[mode_name] = error_entry(error)
            continue
        graphs_after, breaks_after = dynamo_counts()
        calls[mode_name] = (mode, call)
        results[mode_name] = {"times": [], "graphs": graphs_after - graphs,
                              "graph_breaks": breaks_after - breaks}
    graphs_before = dynamo_counts()[0]
    for turn in range(ROUNDS):
        count = steps // ROUNDS + (turn < steps % ROUNDS)
        order = list(calls.items())
        for mode_name, (mode, call) in (reversed(order) if turn % 2 else order):
            try:
                results[mode_name]["times"] += timed_round(call, mode.device, count)
            except Exception as error:  # noqa: BLE001
                results[mode_name] = error_entry(error)
                del calls[mode_name]
    for mode_name in calls:
        times = results[mode_name].pop("times")
        quartiles = statistics.quantiles(times, n=4, method="inclusive")
        results[mode_name].update(median_s=statistics.median(times),
                                  iqr_s=quartiles[2] - quartiles[0])
    return results, dynamo_counts()[0] - graphs_before


def first_step(name, mode_name):
    """The first training step of this process (run in a fresh one)."""
    mode = ALL_MODES[mode_name]
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
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True,
                                timeout=CHILD_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return {"error": f"no first step within {CHILD_TIMEOUT_SECONDS} s (stopped)"}
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
        if ALL_MODES[mode_name].has_cache:
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


def chain_input(device):
    x = torch.rand(CHAIN_ELEMENTS, generator=torch.Generator().manual_seed(3)) * 2 - 1
    return x.to(device)


def make_chain(mode):
    function, x = prepare(mode, pointwise_chain), chain_input(mode.device)
    return lambda: function(x)


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


def graph_cell(mode, *entries):
    """The graphs and graph breaks of a compiled mode's entries, summed."""
    if not mode.backend or any("error" in entry for entry in entries):
        return "-", "-"
    return (str(sum(entry["graphs"] for entry in entries)),
            str(sum(entry["graph_breaks"] for entry in entries)))


def run_steady_state(names, modes, steps, figures):
    print(f"\nsteady state (ms, median ±IQR of {steps}, modes taking turns in {ROUNDS} rounds;"
          f" after {WARM_UP_STEPS} warm-up steps)")
    print("graphs, breaks = graphs Dynamo compiled for the mode (train and inference), graph breaks")
    print(f"{'model':<13}{'mode':<29}{'train step':>18}{'inference':>18}{'graphs':>8}{'breaks':>8}")
    for name in names:
        spec = MODELS[name]
        train, recompiled = side_by_side(
            {mode_name: (mode, lambda mode=mode: training_step(spec, mode))
             for mode_name, mode in modes.items() if not mode.inference_only}, steps)
        inference, recompiled_inference = side_by_side(
            {mode_name: (mode, lambda mode=mode: make_inference(spec, mode))
             for mode_name, mode in modes.items()}, steps)
        recompiled += recompiled_inference
        figures.setdefault(name, {})["steady"] = {
            "train": train, "inference": inference, "graphs_compiled_while_timed": recompiled}
        for mode_name, mode in modes.items():
            trained = () if mode.inference_only else (train[mode_name],)
            cells = ("-" if mode.inference_only else milliseconds(train[mode_name]),
                     milliseconds(inference[mode_name]), *graph_cell(mode, *trained, inference[mode_name]))
            print(f"{name:<13}{mode_name:<29}{cells[0]:>18}{cells[1]:>18}{cells[2]:>8}{cells[3]:>8}")
        print_errors({f"{name} {mode_name} train": entry for mode_name, entry in train.items()})
        print_errors({f"{name} {mode_name} inference": entry
                      for mode_name, entry in inference.items()})
        if recompiled:
            print(f"  {name}: {recompiled} graph(s) compiled while timed")
    print("\nratios of steady-state medians (train / inference)")
    print(f"{'model':<13}{'inductor / kiln-compiled (>= 1.0)':>36}{'kiln-eager / kiln-compiled (> 1)':>36}")
    for name in names:
        steady = figures[name]["steady"]
        cells = [" / ".join(ratio_text(ratio(steady[kind], other, "kiln-compiled", "median_s"))
                            for kind in ("train", "inference"))
                 for other in ("cpu-inductor", "kiln-eager")]
        print(f"{name:<13}{cells[0]:>36}{cells[1]:>36}")
    if "kiln-dynamo-floor" in modes and "kiln-eager" in modes:
        print("\ninference: Dynamo's own cost per call (kiln-dynamo-floor), and kiln-eager's time left"
              " beside it\n(the most a compiled program may take, in the call, to tie kiln eager)")
        print(f"{'model':<13}{'dynamo floor ms':>18}{'kiln-eager - floor ms':>24}"
              f"{'kiln-compiled - floor ms':>27}")
        for name in names:
            inference = figures[name]["steady"]["inference"]
            floor = inference["kiln-dynamo-floor"].get("median_s")
            cells = [f"{floor * 1e3:.3f}" if floor is not None else "n/a"]
            for other in ("kiln-eager", "kiln-compiled"):
                value = inference.get(other, {}).get("median_s")
                cells.append("n/a" if value is None or floor is None else f"{(value - floor) * 1e3:.3f}")
            print(f"{name:<13}{cells[0]:>18}{cells[1]:>24}{cells[2]:>27}")


def run_optimizer_steps(names, modes, steps, figures):
    print(f"\noptimizer step (us, median ±IQR of {steps}; compiled modes compile optimizer.step)")
    print(f"{'model':<13}{'mode':<16}{'step us':>20}")
    for name in names:
        spec = MODELS[name]
        rows, recompiled = side_by_side(
            {mode_name: (mode, lambda mode=mode: make_optimizer_step(spec, mode))
             for mode_name, mode in modes.items()}, steps)
        figures.setdefault(name, {})["optimizer_step"] = {"modes": rows, "graphs_compiled_while_timed": recompiled}
        for mode_name, entry in rows.items():
            cell = "error" if "error" in entry else f"{entry['median_s'] * 1e6:.1f} ±{entry['iqr_s'] * 1e6:.1f}"
            print(f"{name:<13}{mode_name:<16}{cell:>20}")
        print_errors({f"{name} {mode_name}": entry for mode_name, entry in rows.items()})
        if recompiled:
            print(f"  {name}: {recompiled} graph(s) compiled while timed")
    print(f"\n{'model':<13}{'inductor / kiln-compiled':>26}{'kiln-eager / kiln-compiled':>28}")
    for name in names:
        rows = figures[name]["optimizer_step"]["modes"]
        print(f"{name:<13}{ratio_text(ratio(rows, 'cpu-inductor', 'kiln-compiled', 'median_s')):>26}"
              f"{ratio_text(ratio(rows, 'kiln-eager', 'kiln-compiled', 'median_s')):>28}")


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
            counted = "error" not in cold and ALL_MODES[mode_name].device == "kiln"
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
    calls = {}

    def maker(mode_name, mode):
        def make():
            calls[mode_name] = call = make_chain(mode)
            return call
        return mode, make

    rows, recompiled = side_by_side(
        {mode_name: maker(mode_name, mode) for mode_name, mode in modes.items()}, steps)
    reference = pointwise_chain(chain_input("cpu"))
    for mode_name, result in rows.items():
        if "error" not in result:
            result["max_abs_difference"] = (calls[mode_name]().cpu() - reference).abs().max().item()
        difference = "-" if "error" in result else f"{result['max_abs_difference']:.2e}"
        print(f"{mode_name:<15}{milliseconds(result):>18}{difference:>26}")
    print_errors(rows)
    if recompiled:
        print(f"  {recompiled} graph(s) compiled while timed")
    figures["chain"] = {"modes": rows, "graphs_compiled_while_timed": recompiled}
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
        try:
            result = first_step(*args.first_step_of)
        except Exception as error:  # noqa: BLE001 - reported by the parent process
            result = error_entry(error)
        print(json.dumps(result))
        return
    if args.steps < 2:
        parser.error("--steps must be at least 2 (the IQR needs two samples)")
    names = args.models.split(",")
    for name in names:
        if name not in MODELS:
            parser.error(f"unknown model {name!r}; expected some of {', '.join(MODELS)}")
    mode_names = args.modes.split(",")
    for mode_name in mode_names:
        if mode_name not in ALL_MODES:
            parser.error(f"unknown mode {mode_name!r}; expected some of {', '.join(ALL_MODES)}")

    lines = header(sys.argv)
    print("\n".join(lines))
    figures = {"unavailable": {}}
    modes = {}
    for mode_name in mode_names:
        reason = unavailable(ALL_MODES[mode_name])
        if reason:
            figures["unavailable"][mode_name] = reason
            print(f"mode    : {mode_name} skipped: {reason}")
        else:
            modes[mode_name] = ALL_MODES[mode_name]
    # Modes that differ only in where backward runs time the same first step
    # and chain (neither runs a timed backward): those sections skip them.
    # The floor is measured in inference alone (it has no first step or chain).
    forward_modes = {name: mode for name, mode in modes.items()
                     if not mode.device_autograd_thread and not mode.inference_only}

    sections = [("steady state", run_steady_state, (names, modes, args.steps, figures))]
    if not args.skip_cold:
        sections.append(("first step", run_first_steps, (names, list(forward_modes), figures)))
    sections.append(("optimizer step", run_optimizer_steps, (names, forward_modes, args.steps, figures)))
    sections.append(("pointwise chain", run_chain, (forward_modes, args.steps, figures)))
    figures["section_seconds"] = {}
    for title, function, arguments in sections:
        start = time.perf_counter()
        function(*arguments)
        figures["section_seconds"][title] = seconds = time.perf_counter() - start
        print(f"({title}: {seconds:.0f} s)")
    if args.json:
        with open(args.json, "w") as output:
            json.dump({"header": lines, "args": vars(args), "results": figures}, output, indent=2)


if __name__ == "__main__":
    main()
