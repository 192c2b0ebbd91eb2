"""The model suites' CI subset (bench/bench_suite.py --models ci): a few
models of each library train one step in kiln eager and kiln compiled, each
in its own process, and must run with no fallback and CPU-matching numerics.
Also the runner's numerics rules and the page renderer, on synthetic data.
The full suites (timed, all modes, inference too) are `make suite`."""
import json
import math
import os
import subprocess
import sys

import pytest
import torch

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPOSITORY, "bench")
sys.path.insert(0, BENCH)

import bench_suite  # noqa: E402
import render_models  # noqa: E402
import suite_models  # noqa: E402


def test_the_ci_subset_trains_on_kiln_eager_and_compiled(tmp_path):
    output = tmp_path / "suite.json"
    command = [sys.executable, os.path.join(BENCH, "bench_suite.py"), "--models", "ci", "--tasks", "train",
               "--modes", "kiln_eager,kiln_compiled", "--warmup", "0", "--steps", "0", "--timeout", "600",
               "--json", str(output)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=3000)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    results = json.loads(output.read_text())["results"]
    assert set(results) == set(suite_models.CI_MODELS)
    failures = [f"{name} {mode}: {render_models.verdict(record)}"
                for name, entry in results.items() for mode, record in entry["tasks"]["train"].items()
                if not bench_suite.passed(record)]
    assert not failures, "\n".join(failures) + "\n" + completed.stdout[-3000:]
    # Every kiln mode was compared with the CPU, gradients included.
    for entry in results.values():
        for mode in ("kiln_eager", "kiln_compiled"):
            assert entry["tasks"]["train"][mode]["numerics"]["checks"] >= 2


def save(path, tensors):
    torch.save(tensors, path)
    return str(path)


def test_numerics_judge_gradients_as_one_vector_against_float64(tmp_path):
    generator = torch.Generator().manual_seed(0)
    exact = {"loss": torch.tensor(2.5, dtype=torch.float64),
             "grad a": torch.randn(64, 64, generator=generator, dtype=torch.float64),
             "grad b": torch.randn(8, generator=generator, dtype=torch.float64) * 1e-3}
    cpu = {name: (value + 1e-7 * torch.randn(value.shape, generator=generator, dtype=torch.float64)).float()
           for name, value in exact.items()}
    paths = {"exact": save(tmp_path / "exact.pt", exact), "cpu": save(tmp_path / "cpu.pt", cpu)}
    # One small gradient tensor off by 30 % (a flipped ReLU in a tiny layer): the whole gradient is still close.
    flipped = dict(cpu, **{"grad b": cpu["grad b"] * 1.3})
    result = bench_suite.compare_numerics(save(tmp_path / "flipped.pt", flipped), paths["cpu"], paths["exact"])
    assert result["failed"] == 0, result
    # A wrong gradient is not.
    wrong = dict(cpu, **{"grad a": cpu["grad a"] * 1.01})
    result = bench_suite.compare_numerics(save(tmp_path / "wrong.pt", wrong), paths["cpu"], paths["exact"])
    assert result["failed"] == 1 and result["worst"]["name"] == "gradients", result
    # Nor is a loss off by more than the tolerance and 3x the CPU's own error.
    off = dict(cpu, loss=cpu["loss"] + 1e-3)
    result = bench_suite.compare_numerics(save(tmp_path / "off.pt", off), paths["cpu"], paths["exact"])
    assert result["failed"] == 1 and result["worst"]["name"] == "loss", result


def test_a_mode_passes_only_if_it_ran_without_fallback_and_matched():
    assert bench_suite.passed({"status": "ran", "fallback_ops": [], "numerics": {"failed": 0, "checks": 3}})
    assert not bench_suite.passed({"status": "failed", "error": "RuntimeError: x"})
    assert not bench_suite.passed({"status": "ran", "fallback_ops": ["aten::histc"]})
    assert not bench_suite.passed({"status": "ran", "fallback_ops": [], "numerics": {"failed": 1, "checks": 3}})


def test_the_page_renders_pass_rates_speedups_and_a_chart(tmp_path):
    def record(step, ran=True):
        return {"status": "ran", "step_s": step, "first_step_s": step * 10, "peak_memory_mb": 100.0,
                "fallback_ops": [], "numerics": {"failed": 0, "checks": 2}} if ran else \
            {"status": "failed", "error": "UnsupportedOperatorError: kiln cannot lower aten.gcd.default"}
    tasks = {"train": {"cpu_eager": record(0.02), "inductor": record(0.01), "kiln_eager": record(0.01),
                       "kiln_compiled": record(0.005)}}
    results = {"resnet18": {"suite": "torchvision", "description": "d", "tasks": tasks},
               "gpt2": {"suite": "huggingface", "description": "d",
                        "tasks": {"train": dict(tasks["train"], kiln_compiled=record(0, ran=False))}}}
    summary = bench_suite.summarize(results, list(results), ["train"], list(bench_suite.MODES))
    assert summary["torchvision train"]["passed"]["kiln_compiled"] == 1
    assert summary["huggingface train"]["passed"]["kiln_compiled"] == 0
    assert math.isclose(summary["torchvision train"]["kiln_compiled_over_inductor"]["geomean"], 2.0)
    output = tmp_path / "models.md"
    render_models.render({"header": ["commit : abc"], "args": {"steps": 5}, "results": results, "summary": summary},
                         str(output))
    page = output.read_text()
    assert "| `resnet18` | torchvision | pass | pass | pass | pass |" in page
    assert "fails: UnsupportedOperatorError: kiln cannot lower aten.gcd.default" in page
    assert "2.00x" in page and (tmp_path / "models_speedup_train.svg").exists()
    # The targets section names what misses: gpt2 did not compile.
    assert "- huggingface train: pass rate below 100%: kiln compiled 0/1." in page
    assert "training, first step of kiln compiled below Inductor's: **met** on all 2." in page


def test_the_targets_name_the_models_that_miss():
    record = {"status": "ran", "fallback_ops": [], "numerics": {"failed": 0, "checks": 2}}
    records = {"cpu_eager": dict(record, step_s=0.02, first_step_s=0.1, peak_memory_mb=100.0),
               "inductor": dict(record, step_s=0.01, first_step_s=20.0, peak_memory_mb=100.0),
               "kiln_eager": dict(record, step_s=0.01, first_step_s=0.5, peak_memory_mb=120.0),
               "kiln_compiled": dict(record, step_s=0.02, first_step_s=30.0, peak_memory_mb=90.0)}
    results = {"bert": {"suite": "huggingface", "description": "d", "tasks": {"infer": records}}}
    summary = bench_suite.summarize(results, list(results), ["infer"], list(bench_suite.MODES))
    lines = "\n".join(render_models.targets(results, summary, ["infer"], timed=True))
    assert "huggingface infer: kiln compiled / Inductor 0.50x, below the 1.1x target." in lines
    assert "first step of kiln compiled below Inductor's: missed on 1 of 1: `bert` (30.0 s against 20.0 s)" in lines
    assert "kiln eager's peak memory at most CPU eager's + 10%: missed on 1 of 1: `bert` (120 / 100 MB)" in lines
    assert "kiln compiled's peak memory at most Inductor's: **met** on all 1." in lines


def test_more_rounds_rotate_the_modes_and_take_the_median(monkeypatch):
    order = []
    times = {"cpu_eager": [0.03, 0.02], "inductor": [0.01, 0.04], "kiln_eager": [0.02, 0.02]}

    def fake_run(name, mode, task, args, directory, timing_only=False):
        assert timing_only
        order.append(mode)
        return {"status": "ran", "step_s": times[mode].pop(0)}, None

    monkeypatch.setattr(bench_suite, "run_process", fake_run)
    records = {"cpu_eager": {"status": "ran", "step_s": 0.01}, "inductor": {"status": "ran", "step_s": 0.01},
               "kiln_eager": {"status": "ran", "step_s": 0.05},
               "kiln_compiled": {"status": "failed", "error": "x"}}  # not timed again
    args = type("Args", (), {"rounds": 3})()
    bench_suite.time_more_rounds("m", "infer", records, args, "/unused")
    assert order == ["inductor", "kiln_eager", "cpu_eager", "kiln_eager", "cpu_eager", "inductor"]
    assert records["cpu_eager"]["step_s_rounds"] == [0.01, 0.03, 0.02]
    assert records["cpu_eager"]["step_s"] == 0.02 and records["inductor"]["step_s"] == 0.01
    assert records["kiln_eager"]["step_s"] == 0.02 and "step_s_rounds" not in records["kiln_compiled"]
    line = render_models.rounds_line({"m": {"tasks": {"infer": records}}})
    assert line and "1 infer rows in 3 processes per mode" in line[0]


def test_an_update_keeps_the_tasks_not_run_again():
    earlier = {"gpt2": {"suite": "huggingface", "tasks": {"train": {"cpu_eager": 1}, "infer": {"cpu_eager": 2}}}}
    bench_suite.merge_into_earlier(earlier, {"gpt2": {"suite": "huggingface", "tasks": {"infer": {"cpu_eager": 3}}},
                                             "bert": {"suite": "huggingface", "tasks": {"infer": {}}}})
    assert earlier["gpt2"]["tasks"] == {"train": {"cpu_eager": 1}, "infer": {"cpu_eager": 3}}
    assert set(earlier) == {"gpt2", "bert"}


def test_an_update_summarizes_every_mode_run_the_extra_ones_included():
    results = {"gpt2": {"suite": "huggingface", "tasks": {"infer": {
        "kiln_eager_unfused": {"status": "ran", "step_s": 2.0}, "cpu_eager": {"status": "ran", "step_s": 3.0},
        "kiln_eager": {"status": "ran", "step_s": 1.0}}}}}
    modes = bench_suite.modes_in(results)
    assert modes == ["cpu_eager", "kiln_eager", "kiln_eager_unfused"]
    entry = bench_suite.summarize(results, list(results), ["infer"], modes)["huggingface infer"]
    assert entry["kiln_eager_unfused_over_cpu_eager"]["geomean"] == pytest.approx(1.5)
    assert entry["kiln_eager_over_kiln_eager_unfused"]["geomean"] == pytest.approx(2.0)


@pytest.mark.parametrize("text, expected", [("ci", suite_models.CI_MODELS), ("gpt2,resnet18", ["gpt2", "resnet18"])])
def test_model_selection(text, expected):
    assert suite_models.select(text) == expected
    with pytest.raises(KeyError, match="unknown model or suite 'nope'"):
        suite_models.select("nope")
