#!/usr/bin/env python3
"""Renders docs/models.md (and its chart, docs/models_speedup.svg) from the
JSON of bench/bench_suite.py. Standard library only.

    python3 bench/render_models.py [--results bench/results/suite.json] [--output docs/models.md]
"""
import argparse
import json
import math
import os

from bench_suite import passed  # standard library only at import, as this script
from render_common import parse_header, stamp

MODES = ("cpu_eager", "inductor", "kiln_eager", "kiln_compiled")
LABELS = {"cpu_eager": "CPU eager", "inductor": "Inductor", "kiln_eager": "kiln eager",
          "kiln_compiled": "kiln compiled"}


def verdict(record):
    """A cell: pass, or why not."""
    if record is None:
        return "-"
    if record.get("status") != "ran":
        return f"fails: {record.get('error', '?')}".replace("|", "\\|")[:160]
    if record.get("fallback_ops"):
        return "falls back: " + ", ".join(f"`{op}`" for op in record["fallback_ops"])
    numerics = record.get("numerics")
    if numerics and numerics["failed"]:
        worst = numerics["worst"]
        ratio = worst.get("float64_error_ratio")
        extra = f", {ratio:.1f}x the CPU's error against float64" if ratio is not None else ""
        return f"numerics: {numerics['failed']} of {numerics['checks']} checks (`{worst['name']}`{extra})"
    if numerics and numerics.get("float64_rerun"):
        return "pass (float64)"
    return "pass"


def ratio(records, mode, baseline):
    top, bottom = records.get(mode) or {}, records.get(baseline) or {}
    if not (passed(top) and top.get("step_s") and bottom.get("step_s")):
        return None
    return bottom["step_s"] / top["step_s"]


def format_ratio(value):
    return "-" if value is None else f"{value:.2f}x"


def format_seconds(value):
    if not value:
        return "-"
    return f"{value * 1e3:.0f} ms" if value < 1 else f"{value:.1f} s"


def summary_table(summary):
    lines = ["| suite, task | models | " + " | ".join(f"{LABELS[m]} passes" for m in MODES) +
             " | kiln eager / CPU eager | kiln compiled / Inductor | kiln compiled / CPU eager |",
             "|---|---|" + "---|" * (len(MODES) + 3)]
    for key, entry in summary.items():
        cells = [key, str(entry["models"])]
        for mode in MODES:
            count = entry["passed"].get(mode)
            cells.append("-" if count is None else f"{count}/{entry['models']} ({100 * count / entry['models']:.0f}%)")
        for pair in ("kiln_eager_over_cpu_eager", "kiln_compiled_over_inductor", "kiln_compiled_over_cpu_eager"):
            value = entry.get(pair) or {}
            cells.append(f"{format_ratio(value.get('geomean'))} ({value.get('models', 0)})" if value else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


# The targets (docs/models.md, "Targets").
COMPILED_OVER_INDUCTOR = 1.1  # kiln compiled / Inductor, geomean per suite
EAGER_OVER_CPU = 1.0          # kiln eager / CPU eager, geomean per suite
EAGER_MEMORY_SLACK = 1.1      # kiln eager's peak memory at most CPU eager's + 10 %


def _first_step_miss(records):
    kiln, inductor = records.get("kiln_compiled") or {}, records.get("inductor") or {}
    if kiln.get("first_step_s") and inductor.get("first_step_s") and kiln["first_step_s"] >= inductor["first_step_s"]:
        return f"({kiln['first_step_s']:.1f} s against {inductor['first_step_s']:.1f} s)"
    return None


def _memory_miss(records, mode, baseline, slack):
    top, bottom = records.get(mode) or {}, records.get(baseline) or {}
    if top.get("peak_memory_mb") and bottom.get("peak_memory_mb") and \
            top["peak_memory_mb"] > bottom["peak_memory_mb"] * slack:
        return f"({top['peak_memory_mb']:.0f} / {bottom['peak_memory_mb']:.0f} MB)"
    return None


def _speed_miss(records, mode, baseline, floor):
    value = ratio(records, mode, baseline)
    return f"({value:.2f}x)" if value is not None and value < floor else None


# Per model: (what, check(records) -> a detail where the model misses, or None).
_PER_MODEL = (
    ("first step of kiln compiled below Inductor's", _first_step_miss),
    ("kiln eager's peak memory at most CPU eager's + 10%",
     lambda records: _memory_miss(records, "kiln_eager", "cpu_eager", EAGER_MEMORY_SLACK)),
    ("kiln compiled's peak memory at most Inductor's",
     lambda records: _memory_miss(records, "kiln_compiled", "inductor", 1.0)),
    (f"per model (not a target: where the suite geomean comes from), kiln compiled >= "
     f"{COMPILED_OVER_INDUCTOR}x Inductor",
     lambda records: _speed_miss(records, "kiln_compiled", "inductor", COMPILED_OVER_INDUCTOR)),
)


def _suite_misses(summary, timed):
    lines = []
    for key, entry in summary.items():
        missed = [f"{LABELS[mode]} {entry['passed'].get(mode, 0)}/{entry['models']}"
                  for mode in ("kiln_eager", "kiln_compiled") if entry["passed"].get(mode, 0) < entry["models"]]
        if missed:
            lines.append(f"- {key}: pass rate below 100%: {', '.join(missed)}.")
        speed_targets = (("kiln_compiled_over_inductor", "kiln compiled / Inductor", COMPILED_OVER_INDUCTOR),
                         ("kiln_eager_over_cpu_eager", "kiln eager / CPU eager", EAGER_OVER_CPU))
        for pair, label, floor in speed_targets if timed else ():
            value = (entry.get(pair) or {}).get("geomean")
            if value is not None and value < floor:
                lines.append(f"- {key}: {label} {value:.2f}x, below the {floor:.1f}x target.")
    return lines


def targets(results, summary, tasks, timed):
    """The issue's targets, each met or with the models that miss it."""
    lines = ["## Targets", ""]
    suite_lines = _suite_misses(summary, timed)
    speed = (f", kiln compiled >= {COMPILED_OVER_INDUCTOR}x Inductor and kiln eager >= {EAGER_OVER_CPU}x CPU eager"
             if timed else "")
    if suite_lines:
        lines += suite_lines + ["- Every other suite and task meets the pass-rate" +
                                (" and speed targets." if timed else " target.")]
    else:
        lines.append(f"- Per suite: 100% pass in kiln eager and kiln compiled{speed}: **met**.")
    for task in tasks if timed else ():
        word = "training" if task == "train" else "inference"
        task_records = [(name, entry["tasks"][task]) for name, entry in results.items() if entry["tasks"].get(task)]
        for what, check in _PER_MODEL:
            misses = [f"`{name}` {detail}" for name, records in task_records for detail in [check(records)] if detail]
            lines.append(f"- {word}, {what}: " + (f"missed on {len(misses)} of {len(task_records)}: "
                                                  + ", ".join(misses) + "." if misses
                                                  else f"**met** on all {len(task_records)}."))
    return lines + [""]


def model_table(results, task):
    lines = [f"| model | suite | {' | '.join(LABELS[m] for m in MODES)} | step (CPU eager) | kiln eager / CPU "
             "eager | kiln compiled / Inductor | first step: Inductor / kiln compiled | peak memory: kiln "
             "eager / CPU eager |",
             "|---|---|" + "---|" * (len(MODES) + 5)]
    for name, entry in results.items():
        records = entry["tasks"].get(task)
        if records is None:
            continue
        cells = [f"`{name}`", entry["suite"]] + [verdict(records.get(mode)) for mode in MODES]
        cpu = records.get("cpu_eager") or {}
        cells.append(format_seconds(cpu.get("step_s")))
        cells.append(format_ratio(ratio(records, "kiln_eager", "cpu_eager")))
        cells.append(format_ratio(ratio(records, "kiln_compiled", "inductor")))
        inductor, compiled = records.get("inductor") or {}, records.get("kiln_compiled") or {}
        cells.append(f"{format_seconds(inductor.get('first_step_s'))} / {format_seconds(compiled.get('first_step_s'))}"
                     if inductor.get("first_step_s") or compiled.get("first_step_s") else "-")
        kiln_eager = records.get("kiln_eager") or {}
        memory = [record.get("peak_memory_mb") for record in (kiln_eager, cpu)]
        cells.append(f"{memory[0]:.0f} / {memory[1]:.0f} MB" if None not in memory else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def chart(results, task):
    """SVG bars: kiln eager and kiln compiled speedups over CPU eager per model (log scale)."""
    rows = []
    for name, entry in results.items():
        records = entry["tasks"].get(task) or {}
        rows.append((name, ratio(records, "kiln_eager", "cpu_eager"), ratio(records, "kiln_compiled", "cpu_eager")))
    if not any(value for _, *values in rows for value in values):
        return None
    low, high = 0.25, 4.0
    left, width, bar, gap = 170, 420, 7, 6
    height = 40 + len(rows) * (2 * bar + gap) + 30

    def x_of(value):
        value = min(max(value, low), high)
        return left + width * (math.log(value) - math.log(low)) / (math.log(high) - math.log(low))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" height="{height}" '
             'font-family="sans-serif" font-size="11">',
             f'<text x="{left}" y="16" font-size="13">{task}: speed over CPU eager (log scale; 1.0 = as fast)</text>',
             f'<rect x="{left}" y="22" width="10" height="8" fill="#4878a8"/><text x="{left + 14}" y="30">kiln eager</text>',
             f'<rect x="{left + 90}" y="22" width="10" height="8" fill="#d0843c"/>'
             f'<text x="{left + 104}" y="30">kiln compiled</text>']
    y = 40
    for name, eager, compiled in rows:
        parts.append(f'<text x="{left - 6}" y="{y + bar + 3}" text-anchor="end">{name}</text>')
        for value, color, offset in ((eager, "#4878a8", 0), (compiled, "#d0843c", bar)):
            if value:
                start, end = x_of(low), x_of(value)
                parts.append(f'<rect x="{start:.1f}" y="{y + offset}" width="{max(end - start, 1):.1f}" '
                             f'height="{bar - 1}" fill="{color}"><title>{name}: {value:.2f}x</title></rect>')
            else:
                parts.append(f'<text x="{left + 2}" y="{y + offset + bar - 1}" font-size="8">failed or not timed</text>')
        y += 2 * bar + gap
    for tick in (0.25, 0.5, 1, 2, 4):
        x = x_of(tick)
        parts.append(f'<line x1="{x:.1f}" y1="36" x2="{x:.1f}" y2="{y}" stroke="{"#000" if tick == 1 else "#ccc"}"/>')
        parts.append(f'<text x="{x:.1f}" y="{y + 14}" text-anchor="middle">{tick:g}x</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def rounds_line(results):
    """A line on the (model, task) rows whose modes were timed in several
    processes (bench_suite.py --rounds), or nothing."""
    rows = {(name, task): max(len(record.get("step_s_rounds", [])) for record in records.values())
            for name, entry in results.items() for task, records in entry["tasks"].items() if records}
    rounded = {key: count for key, count in rows.items() if count > 1}
    if not rounded:
        return []
    by_task = {}
    for (_, task), count in rounded.items():
        by_task.setdefault(task, set()).add(count)
    described = "; ".join(f"{sum(1 for key in rounded if key[1] == task)} {task} rows in "
                          f"{'/'.join(str(count) for count in sorted(counts))} processes per mode"
                          for task, counts in sorted(by_task.items()))
    return [f"- timed in several processes, rotating the modes' order, step time the median over them "
            f"(`--rounds`): {described}"]


def render(data, output):
    header = parse_header(data.get("header"))
    results, summary, args = data["results"], data.get("summary", {}), data.get("args", {})
    tasks = [task for task in ("train", "infer") if any(task in entry["tasks"] for entry in results.values())]
    timed = bool(args.get("steps"))
    lines = ["# Models", "",
             "<!-- Generated by bench/render_models.py from bench/results/suite.json. Do not edit by hand: "
             "`make suite` runs the suites and re-renders, `make models-page` re-renders. -->", "",
             "Real models from torchvision, TIMM and Hugging Face transformers (random weights, small configurations, "
             "`bench/suite_models.py`), each run in four modes, each (model, task, mode) in its own process, by "
             "`bench/bench_suite.py`. A mode passes when it ran, no op fell back to the CPU, and its first step's loss, "
             "outputs and gradients match CPU eager's: within kiln-eval's tolerances, or no further from a float64 run "
             "of the CPU than 3x CPU eager's own distance from it (root mean square; as PyTorch's dashboard judges "
             "accuracy), the gradients taken as one vector. *pass (float64)*: the float32 gradients missed, and the "
             "same mode run in float64 matched the CPU's float64 run tensor by tensor (a ReLU input a rounding error "
             "from 0 flips on one side and not the other; a wrong kernel would still show in float64). Speed is the median step time after warm-up"
             + (f" (at least {args.get('steps')} steps and {args.get('seconds')} s of them)" if args.get("seconds")
                else "") + "; ratios above 1.0x mean kiln is faster. The first step includes compilation. Peak memory is the process's peak "
             "resident memory over its resident memory once the model and inputs are on their device, the same "
             "measure for every mode (kiln's memory is host memory): what the steps need beyond the model. The CPU "
             "copy of the weights that `.to(\"kiln\")` frees is handed back to the system first.", ""]
    lines += stamp("suite", header)
    if "update" in header:
        lines.append(f"- models re-run since, their rows replaced: `{header['update']}`")
    lines += rounds_line(results)
    if args.get("cache_dir"):
        lines.append(f"- caches: `{args['cache_dir']}`, kept between runs: Kiln's kernels and Inductor's FX-graph "
                     "and AOTAutograd caches start warm for a model run before, so its first steps measure a warm "
                     "start (Inductor's can then skip AOTAutograd's tracing; Kiln caches kernels, not whole graphs)")
    lines += ["", f"Models: {len(results)}; tasks: {', '.join(tasks)}; modes run: "
                  f"{', '.join(sorted({m for e in results.values() for r in e['tasks'].values() for m in r}))}"
                  + ("" if timed else "; **correctness only** (no timed steps in this run: `--steps 0`)"), "",
              "## Per suite", ""]
    lines += summary_table(summary)
    lines += [""] + targets(results, summary, tasks, timed)
    for task in tasks:
        lines += ["", f"## {'Training' if task == 'train' else 'Inference'}", ""]
        svg = chart(results, task)
        if svg:
            name = f"models_speedup_{task}.svg"
            with open(os.path.join(os.path.dirname(os.path.abspath(output)), name), "w") as handle:
                handle.write(svg)
            lines += [f"![kiln eager and kiln compiled over CPU eager, {task}]({name})", ""]
        lines += model_table(results, task)
    descriptions = ["", "## Configurations", ""] + [f"- `{name}`: {entry.get('description') or '-'}"
                                                    for name, entry in results.items()]
    with open(output, "w") as handle:
        handle.write("\n".join(lines + descriptions) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=os.path.join(here, "results", "suite.json"))
    parser.add_argument("--output", default=os.path.join(os.path.dirname(here), "docs", "models.md"))
    args = parser.parse_args()
    with open(args.results) as source:
        render(json.load(source), args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
