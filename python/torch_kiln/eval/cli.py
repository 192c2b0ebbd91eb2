"""kiln-eval: evaluates a model on the kiln device against the CPU.

    kiln-eval examples/transformer.py:build [--steps 5] [--sweep sequence_length=8,12,16]
              [--buckets 8,16] [--output DIR] [--json FILE] [--strict]

Writes report.md, report.html and report.json under --output (default
kiln-eval-reports/<model>) and prints a summary. Exit status: 0 when the
numbers match the CPU; 1 when they do not or a mode failed; 2 for bad
arguments or a model file that cannot be loaded; 3 with --strict when an op
fell back to the CPU.
"""
import argparse
import json
import math
import os
import sys

from . import report_html, report_markdown
from .evaluate import evaluate
from .summary import render_summary
from .workload import EvaluationInputError, load_target

EXIT_USAGE = 2


def _json_safe(value):
    """Infinities and NaN as strings: JSON has no literal for them."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return value


def write_reports(report, directory, json_path=None):
    """Writes report.md, report.html and report.json (or `json_path`); returns their paths."""
    os.makedirs(directory, exist_ok=True)
    paths = {"markdown": os.path.join(directory, "report.md"),
             "html": os.path.join(directory, "report.html"),
             "json": json_path or os.path.join(directory, "report.json")}
    with open(paths["markdown"], "w", encoding="utf-8") as file:
        file.write(report_markdown.render_markdown(report))
    with open(paths["html"], "w", encoding="utf-8") as file:
        file.write(report_html.render_html(report))
    with open(paths["json"], "w", encoding="utf-8") as file:
        json.dump(_json_safe(report), file, indent=2)
    return paths


def _sizes(text):
    try:
        return [int(size) for size in text.split(",") if size.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 8,16,32, got {text!r}") from None


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="kiln-eval", description=__doc__.split("\n\n")[0],
        epilog="The model file defines build() -> (model, make_batch[, loss]) or a dict "
               "(see docs/guides/evaluation.md).")
    parser.add_argument("target", help="path/model.py[:function] (function defaults to build)")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per mode (5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps after the first (1)")
    parser.add_argument("--sweep", help="shape sweep: KEYWORD=SIZE,SIZE,... of make_batch")
    parser.add_argument("--buckets", type=_sizes, help="buckets for the sweep (default: suggested)")
    parser.add_argument("--modes", default="cpu_eager,kiln_eager,kiln_compiled",
                        help="modes to run (cpu_eager is always the reference)")
    parser.add_argument("--output", help="report folder (default kiln-eval-reports/<model>)")
    parser.add_argument("--json", help="also write the JSON report here ('-': print it alone on "
                        "stdout, the summary on stderr)")
    parser.add_argument("--strict", action="store_true", help="exit 3 when any op fell back")
    parser.add_argument("--no-op-check", action="store_true",
                        help="skip the audited step that compares each op with the CPU")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        workload = load_target(args.target)
        report = evaluate(workload, steps=args.steps, warmup=args.warmup, sweep=args.sweep,
                          buckets=args.buckets, modes=args.modes.split(","),
                          strict=args.strict, seed=args.seed, check_ops=not args.no_op_check,
                          progress=not args.quiet)
    except EvaluationInputError as error:
        print(f"kiln-eval: {error}", file=sys.stderr)
        return EXIT_USAGE
    directory = args.output or os.path.join("kiln-eval-reports", report["model"]["name"])
    json_path = None if args.json in (None, "-") else args.json
    paths = write_reports(report, directory, json_path)
    # With --json -, stdout carries the JSON alone and the summary goes to stderr.
    summary = sys.stderr if args.json == "-" else sys.stdout
    print(render_summary(report), file=summary)
    print(f"\nreports: {paths['markdown']}, {paths['html']}, {paths['json']}", file=summary)
    if args.json == "-":
        print(json.dumps(_json_safe(report), indent=2))
    return report["verdict"]["exit_status"]


if __name__ == "__main__":
    sys.exit(main())
