"""kiln-eval end to end: the example models' reports, fallback and numerics
findings, the shape sweep's recompile counts, and bad input."""
import html.parser
import json
import os
import subprocess
import sys

import pytest
import torch

from torch_kiln.eval import EvaluationInputError, evaluate, load_target
from torch_kiln.eval.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
CUSTOM_OPS = os.path.join(ROOT, "tests", "python", "eval_models", "custom_ops.py")
MODES = ("cpu_eager", "kiln_eager", "kiln_compiled")
NUMBER = (int, float)
OPTIONAL_NUMBER = (int, float, type(None))

MODE_FIELDS = {
    "status": str, "error": (str, type(None)), "notes": list, "steps_run": int,
    "first_step_seconds": OPTIONAL_NUMBER, "step_seconds": list,
    "median_step_seconds": OPTIONAL_NUMBER, "min_step_seconds": OPTIONAL_NUMBER,
    "max_step_seconds": OPTIONAL_NUMBER, "speedup_vs_cpu": OPTIONAL_NUMBER,
    "kernels_compiled": int, "kernel_cache_hits": int, "graphs_compiled": int,
    "graph_cache_hits": int, "recompiles": int, "compile_seconds": NUMBER,
    "peak_memory_bytes": (int, type(None)), "losses": list,
}
CHECK_FIELDS = {"mode": str, "kind": str, "name": str, "dtype": str, "shape": list,
                "max_abs_error": NUMBER, "max_rel_error": NUMBER, "atol": NUMBER, "rtol": NUMBER,
                "passed": bool, "note": (str, type(None))}


def check_fields(section, fields, where):
    assert set(section) == set(fields), (where, set(section) ^ set(fields))
    for name, kind in fields.items():
        assert isinstance(section[name], kind), (where, name, section[name])


def check_complete_report(report, steps, warmup):
    """Every field of docs/reference/evaluation_report_schema.md, for a run where all went well."""
    assert report["schema"] == "kiln-eval/1"
    check_fields(report["model"], {"name": str, "source": str, "parameters": int,
                                   "parameter_bytes": int, "has_loss": bool,
                                   "optimizer": (str, type(None))}, "model")
    assert report["model"]["parameters"] > 0 and report["model"]["has_loss"]
    assert report["settings"] == {"steps": steps, "warmup": warmup, "seed": 0, "strict": False,
                                  "modes": list(MODES)}
    check_fields(report["environment"], {"torch": str, "torch_kiln": str, "python": str,
                                         "machine": str, "cpu_threads": int}, "environment")
    assert list(report["modes"]) == list(MODES)
    for mode, run in report["modes"].items():
        check_fields(run, MODE_FIELDS, mode)
        assert run["status"] == "ok" and run["error"] is None, (mode, run["error"])
        assert run["steps_run"] == 1 + warmup + steps and len(run["step_seconds"]) == steps
        assert len(run["losses"]) == 1 + warmup + steps
        assert run["min_step_seconds"] <= run["median_step_seconds"] <= run["max_step_seconds"]
        assert run["first_step_seconds"] > 0 and run["speedup_vs_cpu"] > 0
        assert (run["peak_memory_bytes"] is None) == (mode == "cpu_eager")
    assert report["modes"]["kiln_compiled"]["graphs_compiled"] >= 2  # forward and backward
    assert report["modes"]["kiln_eager"]["graphs_compiled"] == 0
    ops = report["ops"]
    assert set(ops) == {"total_calls", "by_path", "native_share", "fallback", "library", "custom", "all"}
    assert ops["total_calls"] == sum(ops["by_path"].values()) > 0
    assert sum(row["native"] + row["compiled"] + row["library"] + row["custom"] + row["fallback"]
               for row in ops["all"]) == ops["total_calls"]
    assert ops["fallback"] == [] and ops["native_share"] == 1.0
    assert ops["library"] and all(entry["count"] > 0 for entry in ops["library"])
    assert ops["custom"] == []
    numerics = report["numerics"]
    assert numerics["passed"] and numerics["ops_compared"] > 0
    kinds = {(check["mode"], check["kind"]) for check in numerics["checks"]}
    assert kinds == {(mode, kind) for mode in MODES[1:] for kind in ("output", "loss", "gradient")}
    for check in numerics["checks"]:
        check_fields(check, CHECK_FIELDS, check["name"])
        assert check["passed"], check
    gradients = {check["name"] for check in numerics["checks"]
                 if check["kind"] == "gradient" and check["mode"] == "kiln_eager"}
    assert gradients == {name for name, _ in load_target_parameters(report)}
    assert report["verdict"]["exit_status"] == 0 and report["verdict"]["numerics_passed"]
    assert report["verdict"]["fallback_ops"] == 0


def load_target_parameters(report):
    return load_target(report["model"]["source"]).model.named_parameters()


class TagChecker(html.parser.HTMLParser):
    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "source"}

    def __init__(self):
        super().__init__()
        self.open, self.counts = [], {}

    def handle_starttag(self, tag, attributes):
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attributes):
        self.counts[tag] = self.counts.get(tag, 0) + 1

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
        self.open.pop()


def check_html(path, plots):
    with open(path, encoding="utf-8") as file:
        document = file.read()
    checker = TagChecker()
    checker.feed(document)
    checker.close()
    assert checker.open == [], checker.open
    assert checker.counts.get("svg", 0) == plots, checker.counts
    assert "<script src" not in document and "<link" not in document


@pytest.mark.parametrize("example", ["mlp", "cnn", "transformer"])
def test_an_example_produces_a_complete_report(example, tmp_path, capsys):
    status = main([os.path.join(EXAMPLES, f"{example}.py"), "--steps", "2", "--quiet",
                   "--output", str(tmp_path)] +
                  (["--sweep", "sequence_length=6,10,14"] if example == "transformer" else []))
    out = capsys.readouterr().out
    assert status == 0, out
    assert "kiln-eval:" in out and f"reports: {tmp_path}" in out
    with open(tmp_path / "report.json", encoding="utf-8") as file:
        report = json.load(file)
    check_complete_report(report, steps=2, warmup=1)
    plots = 3 if example == "transformer" else 2
    check_html(tmp_path / "report.html", plots)
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert report["model"]["name"] in markdown
    if example == "transformer":
        shapes = report["shapes"]
        assert shapes["error"] is None
        assert (shapes["recompiles"], shapes["programs"]) == (2, 3)
    else:
        assert report["shapes"] is None


def test_a_fallback_op_and_a_wrong_kernel_are_named(tmp_path, capsys):
    status = main([CUSTOM_OPS + ":build", "--steps", "1", "--warmup", "0", "--quiet",
                   "--output", str(tmp_path), "--strict"])
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text())
    assert status != 0
    fallback = report["ops"]["fallback"]
    assert [entry["op"] for entry in fallback] == ["kiln_eval_test::cpu_only_square"]
    assert fallback[0]["count"] == 2  # the first step and the timed one
    assert fallback[0]["sources"] == [f"{os.path.relpath(CUSTOM_OPS)}:"
                                      f"{line_of(CUSTOM_OPS, 'hidden = cpu_only_square')} in forward"]
    assert report["ops"]["native_share"] < 1.0
    failed = [check for check in report["numerics"]["checks"] if not check["passed"]]
    assert failed[0]["kind"] == "op" and failed[0]["mode"] == "kiln_eager"
    assert failed[0]["name"] == "kiln_eval_test::scale_twice output"
    assert f":{line_of(CUSTOM_OPS, 'return scale_twice(hidden)')} in forward" in failed[0]["note"]
    assert abs(failed[0]["max_rel_error"] - 0.25) < 1e-6  # 2.5x against 2x
    assert "kiln_eval_test::scale_twice" in out and "kiln_eval_test::cpu_only_square x2" in out
    # Numerics fail first: exit status 1, not the strict status 3.
    assert report["verdict"]["exit_status"] == status == 1


def test_strict_exits_non_zero_when_an_op_falls_back(tmp_path):
    arguments = [CUSTOM_OPS + ":build_cpu_only", "--steps", "1", "--warmup", "0", "--quiet",
                 "--output", str(tmp_path)]
    assert main(arguments) == 0  # the numbers match: a fallback alone is not a failure
    assert main(arguments + ["--strict"]) == 3
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["numerics"]["passed"] and report["verdict"]["fallback_ops"] == 1


def line_of(path, text):
    with open(path, encoding="utf-8") as file:
        return next(number for number, line in enumerate(file, 1) if text in line)


def test_the_shape_sweep_counts_recompiles_exactly():
    workload = load_target(os.path.join(EXAMPLES, "transformer.py"))
    lengths = [8, 12, 8, 20, 12, 33, 20]
    report = evaluate(workload, steps=1, warmup=0, modes=("cpu_eager",),
                      sweep={"sequence_length": lengths}, buckets=[16, 40])
    shapes = report["shapes"]
    assert shapes["error"] is None, shapes["error"]
    # Four distinct lengths: the first compiles, three recompile.
    assert (shapes["recompiles"], shapes["programs"]) == (3, 4)
    assert [entry["recompiled"] for entry in shapes["per_value"]] == \
        [False, True, False, True, False, True, False]
    # Two buckets: 8 and 12 pad to 16, 20 and 33 to 40.
    assert (shapes["bucketed_recompiles"], shapes["bucketed_programs"]) == (1, 2)
    assert [entry["bucket"] for entry in shapes["per_value"]] == [16, 16, 16, 40, 16, 40, 40]
    assert [entry["bucketed_recompiled"] for entry in shapes["per_value"]] == \
        [False, False, False, True, False, False, False]
    assert max(shapes["suggested_buckets"]) == 33


def test_bad_input_gives_a_clear_message(tmp_path, capsys):
    assert main([str(tmp_path / "missing.py"), "--quiet"]) == 2
    assert "kiln-eval: no such model file" in capsys.readouterr().err
    assert main([CUSTOM_OPS + ":no_such_function", "--quiet"]) == 2
    error = capsys.readouterr().err
    assert "defines no function 'no_such_function'" in error and "build" in error
    with pytest.raises(EvaluationInputError, match="make_batch must be a callable"):
        evaluate(torch.nn.Linear(2, 2), make_batch=None)


def test_a_model_failing_on_the_cpu_is_reported(tmp_path, capsys):
    status = main([CUSTOM_OPS + ":build_failing_on_cpu", "--quiet", "--output", str(tmp_path)])
    report = json.loads((tmp_path / "report.json").read_text())
    assert status == 1
    assert report["modes"]["cpu_eager"]["status"] == "failed"
    assert "mat1 and mat2 shapes cannot be multiplied" in report["modes"]["cpu_eager"]["error"]
    assert report["modes"]["kiln_eager"]["status"] == "skipped"
    assert "fails on the CPU itself" in report["modes"]["kiln_eager"]["error"]
    assert not report["numerics"]["passed"]
    check_html(tmp_path / "report.html", 0)  # nothing ran to plot


def test_an_op_failing_on_kiln_is_reported_beside_what_ran(tmp_path):
    status = main([CUSTOM_OPS + ":build_failing_on_kiln", "--quiet", "--steps", "1",
                   "--output", str(tmp_path)])
    report = json.loads((tmp_path / "report.json").read_text())
    assert status == 1
    assert report["modes"]["cpu_eager"]["status"] == "ok"
    assert report["modes"]["cpu_eager"]["steps_run"] == 3
    kiln = report["modes"]["kiln_eager"]
    assert kiln["status"] == "failed" and "refused_on_kiln has no kiln kernel" in kiln["error"]
    assert "custom_ops.py" in kiln["error"]  # the user's line
    assert any("kiln_eager failed" in message for message in report["verdict"]["messages"])


def test_python_dash_m_runs_the_command(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "torch_kiln.eval", "--help"], capture_output=True, text=True,
        timeout=120)
    assert completed.returncode == 0 and "kiln-eval" in completed.stdout


def test_the_evaluation_starts_no_openmp_team_on_kiln_threads():
    """The audited step compares backward ops on the CPU after the step, on the
    main thread: a CPU op on the autograd engine's kiln thread would start an
    OpenMP team there and slow the CPU reference of every later step
    (docs/design/library_path.md). A team inherits its starter's thread name."""
    script = (
        "import os, torch_kiln\n"
        "from torch_kiln.eval import evaluate, load_target\n"
        f"evaluate(load_target({os.path.join(EXAMPLES, 'cnn.py')!r}), steps=1, warmup=0)\n"
        "names = [open(f'/proc/self/task/{task}/comm').read().strip()\n"
        "         for task in os.listdir('/proc/self/task')]\n"
        "print(sum(name.startswith(('pt_autograd', 'kiln-stream')) for name in names))\n")
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                               timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split()[-1] == "2"  # the autograd thread and the stream worker


def test_json_to_stdout_is_the_json_alone(tmp_path, capsys):
    status = main([CUSTOM_OPS + ":build_cpu_only", "--steps", "1", "--warmup", "0", "--quiet",
                   "--no-op-check", "--output", str(tmp_path), "--json", "-"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # nothing but the report
    assert status == report["verdict"]["exit_status"] == 0
    assert report["ops"]["fallback"][0]["op"] == "kiln_eval_test::cpu_only_square"
    assert "kiln-eval:" in captured.err and "reports:" in captured.err
