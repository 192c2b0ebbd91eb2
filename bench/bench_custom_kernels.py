#!/usr/bin/env python
"""The custom RMSNorm of examples/custom_rms_norm.py (C kernels registered as
torch.library custom ops, docs/guides/custom_kernels.md) against the
composite RMSNorm, x * rsqrt(mean(x^2) + eps) * weight, as models write it.

Each mode runs in its own process (modes sharing a process distort each other
through OpenMP and allocator state), the processes taking turns over
--rounds rounds; a case's figure is the median over the rounds:

- cpu:           the composite in CPU eager;
- kiln-unfused:  the composite in kiln eager, KILN_ADAPTIVE_EAGER=0;
- kiln-adaptive: the composite in kiln eager (adaptive eager fuses it);
- kiln-compiled: torch.compile(composite, backend="kiln");
- kiln-custom:   the custom op (C kernels) in kiln eager;
- kiln-language: the composite's body as a kernel-language function
                 (torch_kiln.kernels.kernel) in kiln eager.

Tasks: forward (--iterations calls in a row, every result kept alive, one
synchronize), and train (forward and backward of x and weight per call).
A process warms up, then reports microseconds per call, the best of
--repeats.

    python bench/bench_custom_kernels.py [--rounds 3] [--json out.json]
"""
import argparse
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ["cpu", "kiln-unfused", "kiln-adaptive", "kiln-compiled", "kiln-custom", "kiln-language"]
TASKS = ["forward", "train"]
SHAPES = ["2048x1024", "512x4096", "8192x256"]


def worker(mode, task, shape, iterations, repeats):
    """Microseconds per call of `task` at `shape` in `mode`, in this process."""
    import torch
    import torch_kiln
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import custom_rms_norm

    device = "cpu" if mode == "cpu" else "kiln"
    rows, columns = (int(size) for size in shape.split("x"))
    torch.manual_seed(0)
    x = torch.randn(rows, columns, device=device, requires_grad=task == "train")
    weight = torch.randn(columns, device=device, requires_grad=task == "train")
    grad = torch.randn(rows, columns, device=device)
    norm = {"kiln-custom": custom_rms_norm.rms_norm,
            "kiln-language": custom_rms_norm.rms_norm_kernel_language}.get(mode, custom_rms_norm.rms_norm_composite)
    if mode == "kiln-compiled":
        norm = torch.compile(norm, backend="kiln")

    def call():
        result = norm(x, weight)
        if task == "train":
            x.grad = weight.grad = None
            result.backward(grad)
            return x.grad, weight.grad
        return result

    def run():
        results = [call() for _ in range(iterations)]
        if device == "kiln":
            torch.kiln.synchronize()
        return results

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from worker_processes import best_microseconds
    wait = torch_kiln._C._adaptive_eager_wait_for_compiles if mode == "kiln-adaptive" else None
    best = best_microseconds(run, iterations, repeats, wait)
    fallbacks = torch_kiln.get_fallback_ops() if device == "kiln" else {}
    return {"us": best, "fallback_ops": fallbacks}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--json")
    parser.add_argument("--worker", nargs=3, metavar=("MODE", "TASK", "SHAPE"))
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker, args.iterations, args.repeats)))
        return 0

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from run_info import header
    from worker_processes import in_rounds, run_worker
    print("\n".join(header(sys.argv)), flush=True)
    cases = [(task, shape) for task in args.tasks.split(",") for shape in args.shapes.split(",")]

    def run(mode, case):
        return run_worker(__file__, [mode, *case], args.iterations, args.repeats,
                          {"KILN_ADAPTIVE_EAGER": "0" if mode == "kiln-unfused" else "1"})
    results = in_rounds(MODES, cases, args.rounds, run)
    samples = {case: {mode: [result["us"] for result in by_mode[mode]] for mode in MODES}
               for case, by_mode in results.items()}
    fallbacks = {}
    for by_mode in results.values():
        for runs in by_mode.values():
            for result in runs:
                fallbacks.update(result["fallback_ops"])
    rows = []
    print(f"{'case':<20} " + " ".join(f"{mode:>14}" for mode in MODES) + "  composite/custom (adaptive, compiled)")
    for case in cases:
        medians = {mode: statistics.median(values) for mode, values in samples[case].items()}
        row = {"case": f"{case[0]} {case[1]}"}
        row.update({f"{mode} us": round(medians[mode], 1) for mode in MODES})
        for mode in ("cpu", "kiln-unfused", "kiln-adaptive", "kiln-compiled", "kiln-language"):
            row[f"{mode} / custom"] = round(medians[mode] / medians["kiln-custom"], 2)
        rows.append(row)
        print(f"{row['case']:<20} " + " ".join(f"{medians[mode]:>12.0f}us" for mode in MODES) +
              f"  {row['kiln-adaptive / custom']:.2f}x {row['kiln-compiled / custom']:.2f}x")
    if fallbacks:
        print(f"fallback ops: {fallbacks}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"header": header(sys.argv), "args": vars(args), "results": rows,
                       "samples_us": {f"{task} {shape}": values for (task, shape), values in samples.items()}},
                      handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
