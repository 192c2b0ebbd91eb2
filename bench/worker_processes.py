"""Runs a benchmark's modes each in a process of its own, taking turns: what
bench_adaptive_eager.py, bench_custom_kernels.py and bench_profiler.py share.
A worker is the benchmark script itself run with `--worker <fields...>`; it
prints one JSON line last, its result (docs/reference/benchmarks.md: modes
sharing a process distort each other through OpenMP and allocator state)."""
import json
import os
import subprocess
import sys


def run_worker(script, fields, iterations, repeats, environment=None, timeout=900):
    """The result `script --worker *fields` printed, run in a fresh process
    with `environment` added to this one's."""
    command = [sys.executable, script, "--worker", *fields, "--iterations", str(iterations),
               "--repeats", str(repeats)]
    output = subprocess.run(command, env={**os.environ, **(environment or {})}, capture_output=True,
                            text=True, timeout=timeout)
    if output.returncode != 0:
        raise RuntimeError(f"{' '.join(fields)} failed:\n{output.stderr[-3000:]}")
    return json.loads(output.stdout.strip().splitlines()[-1])


def in_rounds(modes, cases, rounds, run):
    """{case: {mode: [run(mode, case) of each round]}}. Each round runs every
    case in every mode, the modes in a rotated order, so that no mode always
    runs first (or right after another)."""
    results = {case: {mode: [] for mode in modes} for case in cases}
    for round_index in range(rounds):
        order = modes[round_index % len(modes):] + modes[:round_index % len(modes)]
        for case in cases:
            for mode in order:
                results[case][mode].append(run(mode, case))
    return results


def best_microseconds(run, iterations, repeats, after_warmup_call=None, warmups=3):
    """Microseconds per iteration of `run()` (which runs `iterations` of them
    and synchronizes), the best of `repeats` timings after `warmups` untimed
    runs, each followed by `after_warmup_call()` when given (waiting for
    background compiles, say)."""
    import time
    for _ in range(warmups):
        run()
        if after_warmup_call is not None:
            after_warmup_call()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, (time.perf_counter() - start) / iterations * 1e6)
    return best
