"""Long runs leave nothing behind (issue 35, part 5): CI's short version of
bench/bench_long_run.py. A suite model trains for a few dozen steps in kiln
eager and in kiln compiled, each in its own process, through the bench
script's own loop and judge; after warm-up, device memory must be exactly
flat and live Python objects and RSS within the script's tolerances. A run
with a leak injected must fail the same judge, so the check can fail."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPOSITORY, "bench")
sys.path.insert(0, BENCH)

import bench_long_run  # noqa: E402

MODEL = "gpt2"  # the suite's quickest training step; CI's suite test has compiled its kernels already
STEPS, EVERY, WARMUP = 60, 10, 20


def run_in_own_process(code):
    """Runs `code` after importing bench_long_run in a fresh interpreter; returns what it printed, parsed."""
    script = f"import json, sys\nsys.path.insert(0, {BENCH!r})\nimport bench_long_run\n" + textwrap.dedent(code)
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                               env=dict(os.environ, KILN_FALLBACK="silent"))
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


def failures(verdicts):
    return {metric: entry for metric, entry in verdicts.items() if not entry["passed"]}


def test_eager_training_is_flat_and_an_injected_leak_is_caught():
    runs = run_in_own_process(f"""
        import torch
        flat = bench_long_run.train_and_sample({MODEL!r}, "kiln_eager", {STEPS}, {EVERY})
        kept = []
        def leak(step):  # what a leak looks like: a kiln tensor and a Python object kept each step
            kept.append({{"step": step, "tensor": torch.ones(1024, device="kiln")}})
        leaky = bench_long_run.train_and_sample({MODEL!r}, "kiln_eager", {STEPS // 2}, {EVERY // 2}, after_step=leak)
        print(json.dumps({{"flat": flat, "leaky": leaky}}))
    """)
    assert [entry["step"] for entry in runs["flat"]] == [1] + list(range(EVERY, STEPS + 1, EVERY))
    verdicts, passed = bench_long_run.judge(runs["flat"], WARMUP)
    assert passed, failures(verdicts)
    verdicts, passed = bench_long_run.judge(runs["leaky"], WARMUP // 2)
    assert not passed
    assert {"device_allocated", "live_objects"} <= set(failures(verdicts)), verdicts


def test_compiled_training_is_flat():
    samples = run_in_own_process(f"""
        print(json.dumps(bench_long_run.train_and_sample({MODEL!r}, "kiln_compiled", {STEPS}, {EVERY})))
    """)
    verdicts, passed = bench_long_run.judge(samples, WARMUP)
    assert passed, failures(verdicts)


def samples_of(values):
    """Synthetic samples, one every 100 steps; `values` is a list of
    (device bytes, rss bytes, live objects)."""
    return [{"step": 100 * index, "seconds": float(index), "device_allocated": device, "device_reserved": device,
             "rss": rss, "live_objects": objects} for index, (device, rss, objects) in enumerate(values)]


def test_the_judge_measures_drift_after_warm_up_only():
    mib = bench_long_run.MIB
    # Growth during warm-up (before step 200) does not count; flat afterwards passes.
    warm = samples_of([(0, 0, 0), (512, 50 * mib, 900)] + [(1024, 60 * mib, 1000)] * 8)
    verdicts, passed = bench_long_run.judge(warm, 200)
    assert passed, failures(verdicts)
    assert verdicts["rss"]["from_step"] == 200 and verdicts["rss"]["change"] == 0
    # One 512-byte block more on the device, once, fails: device memory must be exactly flat.
    bumped = samples_of([(1024, 60 * mib, 1000)] * 5 + [(1536, 60 * mib, 1000)] * 5)
    assert set(failures(bench_long_run.judge(bumped, 0)[0])) == {"device_allocated", "device_reserved"}
    # RSS that creeps up 1 MiB per sample: 9 MiB over the window, above the 8 MiB tolerance.
    creeping = samples_of([(0, index * mib, 1000) for index in range(10)])
    verdicts, _ = bench_long_run.judge(creeping, 0)
    assert set(failures(verdicts)) == {"rss"}
    assert verdicts["rss"]["slope_per_1000_steps"] == pytest.approx(10 * mib)
    # Live objects that rise by a few each sample.
    growing = samples_of([(0, 0, 1000 + 5 * index) for index in range(10)])
    assert set(failures(bench_long_run.judge(growing, 0)[0])) == {"live_objects"}
