#!/usr/bin/env python
"""PyTorch's own operator database (OpInfo `op_db`) run on kiln against the CPU.

For every OpInfo (or those named with --ops) and every dtype it declares that
kiln supports, the op's sample inputs are made on kiln (as PyTorch's device
tests make them), copied to the CPU for the reference, and the results are
compared (comparison.py: the dtype's default tolerance, or one PyTorch itself
accepts between two implementations of the op; dtypes must match). With
--grad, the gradients of the float32 samples are compared too (gradients.py).
With --compiled, the float32 samples also run through
torch.compile(backend="kiln") (Dynamo reset for each, dynamic=False), as
PyTorch's test_torchinductor_opinfo runs them through Inductor: the
"compiled" column. Each (op, dtype) gets a status:

- pass: every compared sample matched and no op left the device;
- fallback: every sample matched, but some op ran through the CPU fallback;
- fail: a sample's result differed, or kiln raised where the CPU did not
  (the first such error is kept);
- skip: nothing to compare (no samples, the CPU raised for every sample, or
  the op's output is random or uninitialized memory). A sample whose CPU result
  changes with the seed, or that uses attention dropout, is not compared: the
  CPU's and kiln's generators draw different numbers from one seed.

Each record also names the paths its kiln ops took (compiled, library, native,
fallback: torch_kiln.get_executed_ops()).

    python tests/conformance/opinfo_sweep.py [--ops add,mul] [--dtypes float32,int64]
        [--samples 8] [--grad] [--json results.json] [--markdown docs/reference/operators.md]
"""
import argparse
import json
import os
import sys
import time
import warnings

import torch

import torch_kiln

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from comparison import (  # noqa: E402
    UPCAST, as_accurate_as_cpu, check_on_kiln, compare, processed, to_cpu,
    wider_tolerances)
from gradients import run_gradient_sample  # noqa: E402
from report import DTYPE_NAMES, KILN_DTYPES, markdown, summary  # noqa: E402

# Ops whose results are random or uninitialized: only their dtypes and shapes
# could be compared, which the sweep does not claim as a pass.
NONDETERMINISTIC = {
    "bernoulli", "multinomial", "normal", "rand_like", "randint_like", "randn_like", "randint",
    "cauchy", "exponential", "geometric", "log_normal", "uniform", "empty", "empty_like",
    "new_empty", "empty_strided", "new_empty_strided", "empty_permuted",
    "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout", "nn.functional.rrelu",
    "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d",
}

# OpInfos whose samples cannot be reproduced from a CPU copy of their inputs.
NOT_COMPARABLE = {
    "as_strided.partial_views": "reads storage outside the view, which a copy does not carry",
}

# Ops whose samples draw random numbers when training (dropout inside).
RANDOM_WHEN_TRAINING = {"nn.functional.multi_head_attention_forward"}

# The dtype whose gradients --grad compares.
GRAD_DTYPE = torch.float32


def op_label(op):
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def on_cpu(sample):
    """The sample with its kiln tensors copied to the CPU (arguments the op
    wants on the CPU, such as tensor_split's indices, are there already)."""
    return sample.transform(
        lambda value: value.cpu() if isinstance(value, torch.Tensor) and value.device.type == "kiln"
        else value)


def is_random_sample(op, sample):
    # Attention dropout: OpInfos fix the seed (wrapper_set_seed), but the
    # CPU's and kiln's generators draw different masks from one seed.
    return bool(sample.kwargs.get("dropout_p", 0)) or (
        op.name in RANDOM_WHEN_TRAINING and bool(sample.kwargs.get("training")))


def compiled(op):
    """`op` called through torch.compile(backend="kiln"): a fresh Dynamo for
    each sample (each sample is another graph, and a long sweep would reach
    Dynamo's recompile limit), shapes static."""
    def call(*args, **kwargs):
        torch._dynamo.reset()
        return torch.compile(lambda *a, **k: op(*a, **k), backend="kiln", dynamic=False)(*args, **kwargs)
    return call


def run_sample(op, sample, dtype, call=None):
    """(outcome, detail, executed ops, tolerance) for one sample, made on kiln
    (as PyTorch makes samples on the device under test) and copied to the CPU
    for the reference: outcome is "match", "mismatch", "kiln_raised",
    "cpu_raised" or "random" (the CPU gives another answer under another seed:
    not comparable); executed ops is {op name: {path: count}} on kiln;
    tolerance names the one the match needed (comparison.py). `call` runs
    the op on kiln (default: the op itself, eagerly)."""
    call = call or op
    if is_random_sample(op, sample):
        return "random", "", {}, None
    try:
        reference = on_cpu(sample)
    except Exception as error:  # noqa: BLE001 - kiln cannot hand the sample back
        return ("kiln_raised", f"copying the sample to the CPU: {type(error).__name__}: {error}"[:300],
                {}, None)
    try:
        torch.manual_seed(0)
        expected = processed(reference, op(reference.input, *reference.args, **reference.kwargs))
        torch.manual_seed(1)
        again = processed(reference, op(reference.input, *reference.args, **reference.kwargs))
    except Exception as error:  # noqa: BLE001 - the sample is not valid for the CPU
        return "cpu_raised", repr(error)[:200], {}, None
    try:
        torch.testing.assert_close(again, expected, equal_nan=True)
    except Exception:  # noqa: BLE001 - two seeds, two answers: a random sample (dropout_p > 0)
        return "random", "", {}, None
    torch_kiln.clear_op_tracking()
    try:
        actual = processed(sample, call(sample.input, *sample.args, **sample.kwargs))
        torch.kiln.synchronize()
    except Exception as error:  # noqa: BLE001 - recorded as the op's failure
        return "kiln_raised", f"{type(error).__name__}: {str(error)[:300]}", {}, None
    executed = torch_kiln.get_executed_ops()
    try:
        check_on_kiln(actual)
        actual = to_cpu(actual)
        tolerance = compare(actual, expected, wider_tolerances(op, dtype), accuracy_check=(
            (lambda: as_accurate_as_cpu(op, reference, actual, expected))
            if dtype in UPCAST else None))
    except Exception as error:  # noqa: BLE001 - assert_close raises several types
        return "mismatch", f"{type(error).__name__}: {str(error)[:300]}", executed, None
    return "match", "", executed, tolerance


def _record(outcomes, samples_made):
    """The status record of one (op, dtype) from its samples' outcomes."""
    compared, fallbacks, paths, tolerances = 0, {}, set(), set()
    for index, (outcome, detail, executed, tolerance) in enumerate(outcomes):
        if outcome in ("cpu_raised", "random", "no_grad"):
            continue
        used_fallback = sorted(name for name, by_path in executed.items() if "fallback" in by_path)
        if outcome in ("mismatch", "kiln_raised"):
            return {"status": "fail", "detail": f"sample {index}: {detail}",
                    "fallback_ops": used_fallback}
        compared += 1
        tolerances.add(tolerance)
        for name, by_path in executed.items():
            paths.update(by_path)
            if "fallback" in by_path:
                fallbacks[name] = fallbacks.get(name, 0) + by_path["fallback"]
    if compared == 0:
        return {"status": "skip",
                "detail": "no sample the CPU accepts" if samples_made else "no samples"}
    record = {"samples": compared, "paths": sorted(paths),
              "tolerance": sorted(tolerances - {"default"}) or ["default"]}
    if fallbacks:
        return {"status": "fallback", "fallback_ops": sorted(fallbacks), **record}
    return {"status": "pass", **record}


def _samples(op, dtype, max_samples, requires_grad=False):
    return list(op.sample_inputs("kiln", dtype, requires_grad=requires_grad))[:max_samples]


def _excluded(op):
    if op.name in NONDETERMINISTIC:
        return {"status": "skip", "detail": "random or uninitialized output"}
    if op_label(op) in NOT_COMPARABLE:
        return {"status": "skip", "detail": NOT_COMPARABLE[op_label(op)]}
    return None


def sweep_dtype(op, dtype, max_samples, call=None):
    """The status record of `op` over `dtype` (through `call`, run_sample)."""
    excluded = _excluded(op)
    if excluded:
        return excluded
    try:
        samples = _samples(op, dtype, max_samples)
    except Exception as error:  # noqa: BLE001 - a broken sample generator
        return {"status": "skip", "detail": f"sample inputs raised {error!r}"[:200]}
    outcomes = []
    for sample in samples:
        outcomes.append(run_sample(op, sample, dtype, call))
        if outcomes[-1][0] in ("mismatch", "kiln_raised"):
            break
    return _record(outcomes, bool(samples))


def sweep_gradients(op, max_samples):
    """The status record of `op`'s float32 gradients, or None where the
    OpInfo does not support autograd."""
    if not op.supports_autograd or GRAD_DTYPE not in op.supported_backward_dtypes("cpu"):
        return None
    excluded = _excluded(op)
    if excluded:
        return excluded
    try:
        samples = _samples(op, GRAD_DTYPE, max_samples, requires_grad=True)
    except Exception as error:  # noqa: BLE001 - a broken sample generator
        return {"status": "skip", "detail": f"sample inputs raised {error!r}"[:200]}
    outcomes = []
    for sample in samples:
        if is_random_sample(op, sample):
            continue
        outcomes.append(run_gradient_sample(op, sample, GRAD_DTYPE))
        if outcomes[-1][0] in ("mismatch", "kiln_raised"):
            break
    return _record(outcomes, bool(samples))


def selected_ops(names):
    from torch.testing._internal.common_methods_invocations import op_db
    if not names:
        return list(op_db)
    wanted = set(names)
    return [op for op in op_db if op.name in wanted or op_label(op) in wanted]


def sweep(ops, dtypes, max_samples, progress=None, gradients=False, compile_samples=False):
    """{op label: {dtype name: record, "grad": record, "compiled": record}}."""
    results = {}
    for op in ops:
        declared = op.supported_dtypes("cpu")  # what PyTorch promises on the CPU
        record = {}
        for dtype in dtypes:
            if dtype in declared:
                record[DTYPE_NAMES[dtype]] = sweep_dtype(op, dtype, max_samples)
        if gradients:
            grad_record = sweep_gradients(op, max_samples)
            if grad_record is not None:
                record["grad"] = grad_record
        if compile_samples and GRAD_DTYPE in declared:
            record["compiled"] = sweep_dtype(op, GRAD_DTYPE, max_samples, compiled(op))
        results[op_label(op)] = record
        if progress:
            progress(op_label(op), record)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated OpInfo names (default: all)")
    parser.add_argument("--dtypes", help="comma-separated dtypes (default: all kiln supports)")
    parser.add_argument("--samples", type=int, default=8, help="samples per op and dtype")
    parser.add_argument("--grad", action="store_true", help="compare float32 gradients too")
    parser.add_argument("--compiled", action="store_true",
                        help="run the float32 samples through torch.compile(backend='kiln') too")
    parser.add_argument("--json", help="write the per-op records here")
    parser.add_argument("--markdown", help="write the operator table here (docs/reference/operators.md)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    dtypes = KILN_DTYPES
    if args.dtypes:
        by_name = {name: dtype for dtype, name in DTYPE_NAMES.items()}
        dtypes = [by_name[name] for name in args.dtypes.split(",")]
    ops = selected_ops(args.ops.split(",") if args.ops else None)
    start = time.perf_counter()

    def progress(name, record):
        statuses = " ".join(f"{dtype}={entry['status']}" for dtype, entry in record.items())
        print(f"{name}: {statuses}", flush=True)

    results = sweep(ops, dtypes, args.samples, progress, gradients=args.grad, compile_samples=args.compiled)
    print(f"\n{len(results)} ops in {time.perf_counter() - start:.0f} s")
    for line in summary(results):
        print(line)
    if args.json:
        with open(args.json, "w") as output:
            json.dump(results, output, indent=1, sort_keys=True)
    if args.markdown:
        with open(args.markdown, "w") as output:
            output.write(markdown(results, " ".join(["python"] + sys.argv)))


if __name__ == "__main__":
    main()
