"""torch_kiln.evaluate(): the whole evaluation as one call, returning the
report dict of docs/reference/evaluation_report_schema.md."""
import contextlib
import platform
import sys
import warnings

import torch

from ..op_tracking import get_fallback_mode, set_fallback_mode
from . import numerics, runner, shapes
from .op_audit import OpAudit
from .workload import EvaluationInputError, Workload, as_workload, parse_sweep

EXIT_OK, EXIT_FAILED, EXIT_STRICT = 0, 1, 3


@contextlib.contextmanager
def _progress_bar(enabled, total):
    """Gives advance(steps): a tqdm bar on stderr, or nothing."""
    if not enabled:
        yield lambda steps: None
        return
    from tqdm import tqdm
    with tqdm(total=total, desc="kiln-eval", unit="step", file=sys.stderr, leave=False) as bar:
        yield bar.update


def _make_batches(workload, count, seed):
    batches = []
    for index in range(count):
        torch.manual_seed(seed + index)
        batches.append(runner.split_batch(workload.make_batch(), workload.loss is not None))
    return batches


def _environment():
    import importlib.metadata
    try:
        kiln_version = importlib.metadata.version("torch_kiln")
    except importlib.metadata.PackageNotFoundError:
        kiln_version = "unknown"
    return {"torch": torch.__version__, "torch_kiln": kiln_version,
            "python": platform.python_version(),
            "machine": f"{platform.machine()} {platform.processor() or platform.system()}".strip(),
            "cpu_threads": torch.get_num_threads()}


def _op_section(executed, audit):
    paths = ("native", "compiled", "library", "custom", "fallback")
    rows = [{"op": op, **{path: counts.get(path, 0) for path in paths}}
            for op, counts in sorted(executed.items())]
    by_path = {path: sum(row[path] for row in rows) for path in paths}
    total = sum(by_path.values())
    fallback_sources = audit.sources(audit.fallback_sources) if audit else {}
    return {
        "total_calls": total, "by_path": by_path,
        "native_share": (total - by_path["fallback"]) / total if total else 1.0,
        "fallback": sorted(({"op": row["op"], "count": row["fallback"],
                             "sources": fallback_sources.get(row["op"], [])}
                            for row in rows if row["fallback"]),
                           key=lambda entry: (-entry["count"], entry["op"])),
        "library": sorted(({"op": row["op"], "count": row["library"]}
                           for row in rows if row["library"]),
                          key=lambda entry: (-entry["count"], entry["op"])),
        "custom": sorted(({"op": row["op"], "count": row["custom"]}
                          for row in rows if row["custom"]),
                         key=lambda entry: (-entry["count"], entry["op"])),
        "all": rows,
    }


def _audit(workload, batch, messages):
    """The audited kiln eager step (op_audit.py) on its own copy of the
    model, or None (with a message) when it fails."""
    try:
        trainer = runner.Trainer(workload, "kiln")
        audit = OpAudit()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # anomaly mode announces itself
            with torch.autograd.detect_anomaly(check_nan=False), audit:
                trainer.step(runner.to_device(batch, "kiln"))
        audit.finish()
        return audit
    except Exception as error:  # noqa: BLE001: the report says what did run
        messages.append("the audited kiln step (op sources and per-op numerics) failed: "
                        f"{runner.describe_error(error)}")
        return None


def _numerics_checks(mode, first, reference):
    checks = []
    actual_outputs = dict(numerics.flatten_outputs(first.outputs))
    for name, expected in numerics.flatten_outputs(reference.outputs):
        if name in actual_outputs:
            checks.append(numerics.compare(name, "output", mode, actual_outputs[name], expected))
    if reference.loss is not None and first.loss is not None:
        checks.append(numerics.compare("loss", "loss", mode, first.loss, reference.loss))
    for name, expected in reference.gradients.items():
        actual = first.gradients.get(name)
        if actual is None:
            checks.append({**numerics.compare(name, "gradient", mode, expected, expected),
                           "passed": False, "note": "no gradient on kiln"})
        else:
            checks.append(numerics.compare(name, "gradient", mode, actual, expected))
    return checks


def _run_modes(workload, batches, modes, warmup, check_ops, report, messages, advance):
    """Runs the modes into `report` (modes, model optimizer, ops, per-op
    numerics); returns {mode: FirstStep} of the modes whose first step ran."""
    audit = None
    runs = {}
    for mode in modes:
        if mode != "cpu_eager" and not runs["cpu_eager"].running:
            report["modes"][mode]["error"] = "not run: the model fails on the CPU itself"
            continue
        runs[mode] = runner.ModeRun(mode, workload)
        runs[mode].start(batches[:1 + warmup], advance)
        if mode == "kiln_eager" and check_ops and runs[mode].running:
            audit = _audit(workload, batches[0], messages)
            advance(1)
    # The timed steps: rounds in which the modes take turns, so that
    # background load on a shared machine hits all of them alike.
    timed = batches[1 + warmup:]
    rounds = min(runner.ROUNDS, len(timed))
    for turn in range(rounds):
        chunk = timed[turn * len(timed) // rounds:(turn + 1) * len(timed) // rounds]
        for run in runs.values():
            if run.running:
                run.timed_steps(chunk, advance)
    for mode, run in runs.items():
        report["modes"][mode] = run.finish()
        trainer = run.trainer
        if trainer is not None and trainer.optimizer is not None:
            report["model"]["optimizer"] = runner.describe_optimizer(trainer.optimizer)
    if "kiln_eager" in runs:
        report["ops"] = _op_section(runs["kiln_eager"].executed_ops(), audit)
        if audit:
            report["numerics"]["ops_compared"] = audit.ops_compared
            report["numerics"]["checks"].extend(audit.op_failures)
    return {mode: run.first for mode, run in runs.items() if run.first is not None}


def evaluate(model, make_batch=None, loss=None, *, optimizer=None, steps=5, warmup=1,
             sweep=None, buckets=None, modes=runner.MODES, strict=False, seed=0,
             check_ops=True, progress=False, name=None):
    """Evaluates `model` on the kiln device against the CPU; returns the report.

    model       an nn.Module (on the CPU), or a torch_kiln.eval.Workload
    make_batch  make_batch(**sizes) -> inputs, or (inputs, target) with a loss
    loss        loss(outputs, target) -> scalar: steps then run backward and
                `optimizer` (default SGD, lr=0.01)
    steps       timed steady-state steps per mode, after `warmup` untimed ones
                and the first (compiling) step
    sweep       {"sequence_length": [8, 16, ...]} or "sequence_length=8,16":
                recompilations over those make_batch sizes, with and without
                bucketing (`buckets`, default: suggested from the sizes)
    check_ops   compare each op's kiln output with the CPU on one audited step
    """
    if isinstance(model, Workload):
        workload = model
    else:
        workload = as_workload({"model": model, "make_batch": make_batch, "loss": loss,
                                "optimizer": optimizer, "name": name})
    sweep = parse_sweep(sweep) if sweep is not None else workload.sweep
    unknown = [mode for mode in modes if mode not in runner.MODES]
    if unknown or "cpu_eager" not in modes:
        raise EvaluationInputError(f"modes must include cpu_eager and be among {runner.MODES}, "
                                   f"got {list(modes)}")
    modes = [mode for mode in runner.MODES if mode in modes]  # the CPU reference first
    if steps < 1 or warmup < 0:
        raise EvaluationInputError("steps must be >= 1 and warmup >= 0")
    parameters = list(workload.model.parameters())
    report = {
        "schema": "kiln-eval/1",
        "model": {"name": workload.name, "source": workload.source,
                  "parameters": sum(parameter.numel() for parameter in parameters),
                  "parameter_bytes": sum(parameter.numel() * parameter.element_size()
                                         for parameter in parameters),
                  "has_loss": workload.loss is not None, "optimizer": None},
        "settings": {"steps": steps, "warmup": warmup, "seed": seed, "strict": strict,
                     "modes": list(modes)},
        "environment": _environment(),
        "modes": {mode: runner.empty_mode_report() for mode in modes},
        "ops": _op_section({}, None),
        "numerics": {"passed": True, "ops_compared": 0, "checks": []},
        "shapes": None,
        "verdict": {},
    }
    messages = []
    firsts = {}
    count = 1 + warmup + steps
    total = count * len(modes) + (1 if check_ops else 0) + \
        (2 * len(next(iter(sweep.values()))) if sweep else 0)
    previous_fallback_mode = get_fallback_mode()
    set_fallback_mode("silent")  # the report lists every fallback
    try:
        with _progress_bar(progress, total) as advance:
            try:
                batches = _make_batches(workload, count, seed)
            except Exception as error:  # noqa: BLE001
                messages.append(f"make_batch() failed: {runner.describe_error(error)}")
                batches = None
            firsts = _run_modes(workload, batches, modes, warmup, check_ops, report, messages,
                                advance) if batches else {}
            if sweep and report["modes"]["cpu_eager"]["status"] == "ok":
                (keyword, values), = sweep.items()
                report["shapes"] = shapes.sweep(workload, keyword, values, buckets, seed, advance)
    finally:
        set_fallback_mode(previous_fallback_mode)
    _finish(report, firsts, messages, strict)
    return report


def _finish(report, firsts, messages, strict):
    """Speed ratios, numerics against the CPU's first step, and the verdict."""
    modes = report["modes"]
    cpu_median = modes["cpu_eager"]["median_step_seconds"]
    for mode, mode_report in modes.items():
        if cpu_median and mode_report["median_step_seconds"]:
            mode_report["speedup_vs_cpu"] = cpu_median / mode_report["median_step_seconds"]
        if mode_report["status"] != "ok":
            messages.append(f"{mode} {mode_report['status']}: {mode_report['error']}")
    reference = firsts.get("cpu_eager")
    for mode in ("kiln_eager", "kiln_compiled"):
        if reference is not None and firsts.get(mode) is not None:
            report["numerics"]["checks"].extend(_numerics_checks(mode, firsts[mode], reference))
    checks = report["numerics"]["checks"]
    checks.sort(key=lambda check: check["passed"])  # failures first
    failed = [check for check in checks if not check["passed"]]
    compared = any(check["kind"] != "op" for check in checks)
    if not compared and len(modes) > 1:
        messages.append("numerics: not checked, no kiln mode completed a step beside the CPU")
    report["numerics"]["passed"] = not failed and (compared or len(modes) == 1)
    for check in failed[:10]:
        messages.append(f"numerics: {check['mode']} {check['kind']} {check['name']} differs from "
                        f"the CPU: max abs error {check['max_abs_error']:.3g}, max rel error "
                        f"{check['max_rel_error']:.3g} (rtol {check['rtol']:g})"
                        + (f"; {check['note']}" if check["note"] else ""))
    fallback = report["ops"]["fallback"]
    for entry in fallback:
        where = f" from {entry['sources'][0]}" if entry["sources"] else ""
        messages.append(f"fallback: {entry['op']} ran on the CPU {entry['count']} times{where}")
    if report["shapes"] and report["shapes"]["error"]:
        messages.append(f"shape sweep failed: {report['shapes']['error']}")
    mode_failed = any(mode["status"] == "failed" for mode in modes.values()) or not firsts
    status = EXIT_OK
    if not report["numerics"]["passed"] or mode_failed:
        status = EXIT_FAILED
    elif strict and fallback:
        status = EXIT_STRICT
    report["verdict"] = {"numerics_passed": report["numerics"]["passed"], "fallback_ops": len(fallback),
                         "exit_status": status, "messages": messages}
