#!/usr/bin/env python
"""Hand-written pointwise chains in eager mode, with adaptive eager
(docs/design/adaptive_eager.md) off and on, beside torch.compile and the CPU.

Each mode runs in its own process (modes sharing a process distort each other
through OpenMP and allocator state), and the processes take turns over
--rounds rounds; a chain's figure is the median over the rounds:

- cpu:           CPU eager;
- kiln-unfused:  kiln eager with KILN_ADAPTIVE_EAGER=0 (one kernel per op);
- kiln-adaptive: kiln eager with adaptive eager on (the default);
- kiln-compiled: torch.compile(chain, backend="kiln").

A process warms up (and, adaptive, waits for its background compiles), then
times --iterations calls in a row, as a model's step issues them, keeping
every call's result alive (so no work is skipped as dead), and one
synchronize at the end; it reports microseconds per call, the best of
--repeats. The chains:

- gelu_tanh: GELU's tanh approximation written as its formula;
- gelu_erf: exact GELU as x * 0.5 * (1 + erf(x / sqrt(2)));
- rmsnorm: x * rsqrt(mean(x^2) + eps) * weight;
- layernorm: (x - mean) / sqrt(var + eps) * weight + bias, from its formula;
- swiglu: the activations of a SwiGLU MLP, silu(gate) * up as
  gate * sigmoid(gate) * up;
- adam: torch.optim.Adam(foreach=False).step() over 8 tensors.

    python bench/bench_adaptive_eager.py [--rounds 3] [--json out.json]
"""
import argparse
import json
import os
import statistics
import sys

ROWS, COLS = 2048, 1024
MODES = ["cpu", "kiln-unfused", "kiln-adaptive", "kiln-compiled"]
CHAINS = ["gelu_tanh", "gelu_erf", "rmsnorm", "layernorm", "swiglu", "adam"]


def make_chain(name, device):
    """(call, its inputs) for chain `name` on `device`."""
    import torch
    torch.manual_seed(0)
    x = torch.randn(ROWS, COLS, device=device)
    weight = torch.randn(COLS, device=device)
    bias = torch.randn(COLS, device=device)
    if name == "gelu_tanh":
        return (lambda t: 0.5 * t * (1.0 + torch.tanh(0.7978845608028654 * (t + 0.044715 * t * t * t)))), (x,)
    if name == "gelu_erf":
        return (lambda t: t * 0.5 * (1.0 + torch.erf(t / 1.4142135623730951))), (x,)
    if name == "rmsnorm":
        return (lambda t, w: t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * w), (x, weight)
    if name == "layernorm":
        def layer_norm(t, w, b):
            mean = t.mean(-1, keepdim=True)
            centred = t - mean
            variance = (centred * centred).mean(-1, keepdim=True)
            return centred / torch.sqrt(variance + 1e-5) * w + b
        return layer_norm, (x, weight, bias)
    if name == "swiglu":
        up = torch.randn(ROWS, COLS, device=device)
        return (lambda gate, u: gate * torch.sigmoid(gate) * u), (x, up)
    if name == "adam":
        parameters = [torch.nn.Parameter(torch.randn(512, 1024, device=device)) for _ in range(8)]
        for parameter in parameters:
            parameter.grad = torch.randn_like(parameter)
        optimizer = torch.optim.Adam(parameters, lr=1e-3, foreach=False)
        return (lambda: optimizer.step()), ()
    raise ValueError(name)


def worker(mode, chain, iterations, repeats):
    """Microseconds per call of `chain` in `mode`, in this process."""
    import torch
    import torch_kiln  # noqa: F401
    device = "cpu" if mode == "cpu" else "kiln"
    call, inputs = make_chain(chain, device)
    if mode == "kiln-compiled":
        call = torch.compile(call, backend="kiln")

    def synchronize():
        if device == "kiln":
            torch.kiln.synchronize()

    def run():
        results = [call(*inputs) for _ in range(iterations)]
        synchronize()
        return results

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from worker_processes import best_microseconds
    wait = torch_kiln._C._adaptive_eager_wait_for_compiles if mode == "kiln-adaptive" else None
    best = best_microseconds(run, iterations, repeats, wait)
    stats = torch_kiln.adaptive_eager_stats() if device == "kiln" else {}
    return {"us": best, "stats": stats}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chains", default=",".join(CHAINS))
    parser.add_argument("--json")
    parser.add_argument("--worker", nargs=2, metavar=("MODE", "CHAIN"))
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker, args.iterations, args.repeats)))
        return 0

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from run_info import header
    from worker_processes import in_rounds, run_worker
    print("\n".join(header(sys.argv)), flush=True)
    chains = args.chains.split(",")

    def run(mode, chain):
        return run_worker(__file__, [mode, chain], args.iterations, args.repeats,
                          {"KILN_ADAPTIVE_EAGER": "0" if mode == "kiln-unfused" else "1"})
    results = in_rounds(MODES, chains, args.rounds, run)
    samples = {chain: {mode: [result["us"] for result in by_mode[mode]] for mode in MODES}
               for chain, by_mode in results.items()}
    last_stats = {chain: by_mode["kiln-adaptive"][-1]["stats"] for chain, by_mode in results.items()}
    rows = []
    print(f"{'chain':<10} " + " ".join(f"{mode:>14}" for mode in MODES) + "   adaptive/unfused  compiled/adaptive")
    for chain in chains:
        medians = {mode: statistics.median(values) for mode, values in samples[chain].items()}
        speedup = medians["kiln-unfused"] / medians["kiln-adaptive"]
        against_compiled = medians["kiln-compiled"] / medians["kiln-adaptive"]
        print(f"{chain:<10} " + " ".join(f"{medians[mode]:>12.0f}us" for mode in MODES) +
              f"   {speedup:>15.2f}x  {against_compiled:>16.2f}x")
        rows.append({"chain": chain, "us": medians, "samples_us": samples[chain],
                     "adaptive_over_unfused": speedup, "compiled_over_adaptive": against_compiled,
                     "adaptive_stats": last_stats.get(chain, {})})
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"header": header(sys.argv), "args": vars(args),
                       "results": {"shape": [ROWS, COLS], "iterations": args.iterations, "rounds": args.rounds,
                                   "chains": rows}}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
