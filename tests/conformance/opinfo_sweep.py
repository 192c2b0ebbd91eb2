#!/usr/bin/env python
"""PyTorch's own operator database (OpInfo `op_db`) run on kiln against the CPU.

For every OpInfo (or those named with --ops) and every dtype it declares that
kiln supports, the op's sample inputs run on the CPU and on kiln copies, and
the results are compared with torch.testing.assert_close (PyTorch's default
tolerances for the dtype; dtypes must match). Each (op, dtype) gets a status:

- pass: every compared sample matched and no op left the device;
- fallback: every sample matched, but some op ran through the CPU fallback;
- fail: a sample's result differed, or kiln raised where the CPU did not
  (the first such error is kept);
- skip: nothing to compare (no samples, the CPU raised for every sample, or
  the op's output is random or uninitialized memory). A sample whose CPU result
  changes with the seed, or that uses attention dropout, is not compared: the
  CPU's and kiln's generators draw different numbers from one seed.

    python tests/conformance/opinfo_sweep.py [--ops add,mul] [--dtypes float32,int64]
        [--samples 8] [--json results.json] [--markdown docs/operators.md]

Forward only for now; gradients and PyTorch's TestCommon checks come next.
"""
import argparse
import json
import sys
import time
import warnings

import torch
import torch.utils._pytree as pytree

import torch_kiln

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

KILN_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
               torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]

DTYPE_NAMES = {dtype: str(dtype).removeprefix("torch.") for dtype in KILN_DTYPES}


def op_label(op):
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def on_cpu(sample):
    """The sample with its kiln tensors copied to the CPU (arguments the op
    wants on the CPU, such as tensor_split's indices, are there already)."""
    return sample.transform(
        lambda value: value.cpu() if isinstance(value, torch.Tensor) and value.device.type == "kiln"
        else value)


def to_cpu(result):
    return pytree.tree_map(
        lambda value: value.cpu() if isinstance(value, torch.Tensor) else value, result)


def check_on_kiln(result):
    for value in pytree.tree_leaves(result):
        if isinstance(value, torch.Tensor) and value.device.type != "kiln":
            raise AssertionError(f"a result is on {value.device}, not on kiln")


def run_sample(op, sample):
    """(outcome, detail, fallback ops) for one sample, made on kiln (as PyTorch
    makes samples on the device under test) and copied to the CPU for the
    reference: outcome is "match", "mismatch", "kiln_raised", "cpu_raised" or
    "random" (the CPU gives another answer under another seed: not comparable)."""
    if sample.kwargs.get("dropout_p", 0) or (
            op.name in RANDOM_WHEN_TRAINING and sample.kwargs.get("training")):
        # Attention dropout: OpInfos fix the seed (wrapper_set_seed), but the
        # CPU's and kiln's generators draw different masks from one seed.
        return "random", "", {}
    try:
        reference = on_cpu(sample)
    except Exception as error:  # noqa: BLE001 - kiln cannot hand the sample back
        return "kiln_raised", f"copying the sample to the CPU: {type(error).__name__}: {error}"[:300], {}
    try:
        torch.manual_seed(0)
        expected = op(reference.input, *reference.args, **reference.kwargs)
        torch.manual_seed(1)
        again = op(reference.input, *reference.args, **reference.kwargs)
    except Exception as error:  # noqa: BLE001 - the sample is not valid for the CPU
        return "cpu_raised", repr(error)[:200], {}
    try:
        torch.testing.assert_close(again, expected, equal_nan=True)
    except Exception:  # noqa: BLE001 - two seeds, two answers: a random sample (dropout_p > 0)
        return "random", "", {}
    torch_kiln.clear_op_tracking()
    try:
        actual = op(sample.input, *sample.args, **sample.kwargs)
        torch.kiln.synchronize()
    except Exception as error:  # noqa: BLE001 - recorded as the op's failure
        return "kiln_raised", f"{type(error).__name__}: {str(error)[:300]}", {}
    fallbacks = dict(torch_kiln.get_fallback_ops())
    try:
        check_on_kiln(actual)
        torch.testing.assert_close(to_cpu(actual), expected, equal_nan=True, check_device=False)
    except Exception as error:  # noqa: BLE001 - assert_close raises several types
        return "mismatch", f"{type(error).__name__}: {str(error)[:300]}", fallbacks
    return "match", "", fallbacks


def sweep_dtype(op, dtype, max_samples):
    """The status record of `op` over `dtype`."""
    if op.name in NONDETERMINISTIC:
        return {"status": "skip", "detail": "random or uninitialized output"}
    if op_label(op) in NOT_COMPARABLE:
        return {"status": "skip", "detail": NOT_COMPARABLE[op_label(op)]}
    try:
        samples = list(op.sample_inputs("kiln", dtype, requires_grad=False))[:max_samples]
    except Exception as error:  # noqa: BLE001 - a broken sample generator
        return {"status": "skip", "detail": f"sample inputs raised {error!r}"[:200]}
    compared, fallbacks = 0, {}
    for index, sample in enumerate(samples):
        outcome, detail, used = run_sample(op, sample)
        if outcome in ("cpu_raised", "random"):
            continue
        if outcome in ("mismatch", "kiln_raised"):
            return {"status": "fail", "detail": f"sample {index}: {detail}",
                    "fallback_ops": sorted(used)}
        compared += 1
        for name, count in used.items():
            fallbacks[name] = fallbacks.get(name, 0) + count
    if compared == 0:
        return {"status": "skip", "detail": "no sample the CPU accepts" if samples else "no samples"}
    if fallbacks:
        return {"status": "fallback", "samples": compared, "fallback_ops": sorted(fallbacks)}
    return {"status": "pass", "samples": compared}


def selected_ops(names):
    from torch.testing._internal.common_methods_invocations import op_db
    if not names:
        return list(op_db)
    wanted = set(names)
    return [op for op in op_db if op.name in wanted or op_label(op) in wanted]


def sweep(ops, dtypes, max_samples, progress=None):
    results = {}
    for op in ops:
        declared = op.supported_dtypes("cpu")  # what PyTorch promises on the CPU
        record = {}
        for dtype in dtypes:
            if dtype in declared:
                record[DTYPE_NAMES[dtype]] = sweep_dtype(op, dtype, max_samples)
        results[op_label(op)] = record
        if progress:
            progress(op_label(op), record)
    return results


def summary(results):
    """Native pass rates per dtype over the (op, dtype) pairs that were not skipped."""
    lines = []
    for dtype in KILN_DTYPES:
        name = DTYPE_NAMES[dtype]
        statuses = [record[name]["status"] for record in results.values() if name in record]
        counted = [status for status in statuses if status != "skip"]
        if not counted:
            continue
        passed = counted.count("pass")
        lines.append(f"{name}: {passed} of {len(counted)} op-dtype pairs pass natively "
                     f"({100.0 * passed / len(counted):.1f} %), {counted.count('fallback')} "
                     f"through the fallback, {counted.count('fail')} fail; "
                     f"{len(statuses) - len(counted)} skipped")
    return lines


SYMBOLS = {"pass": "pass", "fallback": "fallback", "fail": "**FAIL**", "skip": "skip"}


def markdown(results, command):
    # The dtypes this run swept (--dtypes may narrow it).
    swept = {dtype for record in results.values() for dtype in record}
    columns = [DTYPE_NAMES[dtype] for dtype in KILN_DTYPES if DTYPE_NAMES[dtype] in swept]
    out = ["# Operators on kiln", "",
           "Generated by `tests/conformance/opinfo_sweep.py` from PyTorch's OpInfo database; do not "
           "edit by hand. Regenerate with:", "", f"    {command}", "",
           "pass: the samples match the CPU with no op leaving the device; fallback: they match, "
           "but an op ran on the CPU; FAIL: a result differs or kiln raised; skip: nothing to "
           "compare. Empty: the OpInfo does not declare the dtype. Dtypes swept: "
           + ", ".join(columns) + ".", "", "## Summary", ""]
    out += [f"- {line}" for line in summary(results)]
    out += ["", "## Per operator", "",
            "| op | " + " | ".join(columns) + " |",
            "|---|" + "---|" * len(columns)]
    for name in sorted(results):
        record = results[name]
        cells = [SYMBOLS[record[column]["status"]] if column in record else "" for column in columns]
        out.append(f"| `{name}` | " + " | ".join(cells) + " |")
    failures = [(name, column, record[column]["detail"]) for name, record in sorted(results.items())
                for column in columns if column in record and record[column]["status"] == "fail"]
    if failures:
        out += ["", "## Failures (first error of each)", ""]
        out += [f"- `{name}` {column}: {detail}" for name, column, detail in failures]
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated OpInfo names (default: all)")
    parser.add_argument("--dtypes", help="comma-separated dtypes (default: all kiln supports)")
    parser.add_argument("--samples", type=int, default=8, help="samples per op and dtype")
    parser.add_argument("--json", help="write the per-op records here")
    parser.add_argument("--markdown", help="write the operator table here (docs/operators.md)")
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

    results = sweep(ops, dtypes, args.samples, progress)
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
