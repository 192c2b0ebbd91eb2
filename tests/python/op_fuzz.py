"""Differential fuzzing of kiln's native ops against the CPU (issue 35, part 2).

Hypothesis draws a case from one of the op families in FAMILIES: an op Kiln
registers natively, its tensor inputs (shapes with zero sizes, size-1 dims and
broadcasting; dtypes; layouts: contiguous, transposed, sliced, expanded for
inputs that are only read), its scalars (infinities, NaN, negative zero,
subnormals, the dtype's extreme values) and its form (functional, in-place,
out=). check_case() then runs it on copies of the inputs on the CPU and on
kiln and asserts that

- both succeed or both raise, with the same exception type;
- results agree: dtype and shape exactly, values at torch.testing's default
  tolerance for the dtype, or, for float32 and narrower, no further from the
  float64 answer than twice the CPU's own error (the rule of
  docs/guides/conformance.md: summation order and intermediate precision may
  differ, accuracy may not);
- an op that returns its in-place or out= argument does so on kiln too;
- the storage of every input the op does not write is bit for bit unchanged,
  and a written one equals the CPU's afterwards, outside the view included;
  when the op failed, kiln's inputs are all unchanged (when the CPU's are);
- nothing ran on the CPU through Kiln's fallback: the case tests kiln's kernels.

`python tests/python/op_fuzz.py --seconds 600 --seed 0` (`make fuzz`) runs
every family in rounds until the time is up; test_op_fuzz.py runs a fixed,
derandomized number of examples per family in CI. A difference Hypothesis
finds is shrunk to a small case and printed with its inputs.
"""
import argparse
import math
import sys
import time
import warnings

import torch
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import torch_kiln
from differential import TOLERANCES  # (rtol, atol) as torch.testing.assert_close uses by default
from op_fuzz_families import FAMILIES
from op_fuzz_inputs import Case, Input  # noqa: F401  (Input: for tests that build a Case by hand)

# Cases run by check_case() in this process (shrinking included), and how
# they ended: "result" (both returned), "error" (both raised), "excluded".
cases_run = 0
outcomes = {"result": 0, "error": 0, "excluded": 0}


# ---------------------------------------------------------------------------
# Running a case on both devices and comparing


def same_bits(first, second):
    if first.shape != second.shape or first.dtype != second.dtype:
        return False
    if first.is_complex():
        return same_bits(torch.view_as_real(first), torch.view_as_real(second))
    if first.is_floating_point():
        integer = {2: torch.int16, 4: torch.int32, 8: torch.int64}[first.element_size()]
        return torch.equal(first.view(integer), second.view(integer))
    return torch.equal(first, second)


def upcast(tensor):
    if tensor.is_complex():
        return tensor.to(torch.complex128)
    return tensor.double() if tensor.is_floating_point() else tensor


def close(expected, actual, exact, tolerance=None, magnitude=None):
    """None when kiln's `actual` matches the CPU's `expected`, else why not.
    `exact` is a callable giving the float64 answer, asked only when needed;
    `tolerance` (rtol, atol) replaces the dtype's."""
    if expected.dtype != actual.dtype or expected.shape != actual.shape:
        return f"dtype/shape {actual.dtype} {tuple(actual.shape)} != CPU's {expected.dtype} {tuple(expected.shape)}"
    if not expected.is_floating_point() and not expected.is_complex():
        return None if torch.equal(expected, actual) else f"values differ:\n kiln {actual}\n CPU  {expected}"
    rtol, atol = tolerance or TOLERANCES[expected.dtype]
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
        return None
    except AssertionError as error:
        message = f"{error}\n kiln {actual}\n CPU  {expected}"
    if expected.dtype in (torch.float64, torch.complex128):
        return message
    reference = exact()
    if reference is None or reference.shape != expected.shape:
        return message
    if expected.is_complex():
        # Part by part, as assert_close compares them.
        expected, actual, reference = (torch.view_as_real(value.to(torch.complex128))
                                       for value in (expected, actual, reference))
    expected, actual, reference = expected.double(), actual.double(), reference.double()
    kiln_error = (actual - reference).abs()
    cpu_error = (expected - reference).abs()
    scale = reference.abs()
    if magnitude is not None and magnitude() is not None and not expected.is_complex():
        scale = torch.maximum(scale, magnitude().double())
    within = kiln_error <= atol + rtol * scale
    no_worse = kiln_error <= 2 * cpu_error
    # Kiln's NaN and infinities must be the CPU's; a finite kiln element must
    # be as accurate as the CPU's, or, where the CPU's is not finite but the
    # float64 answer is, within tolerance of that answer.
    agree = (~actual.isnan() | expected.isnan()) & (~actual.isinf() | (expected == actual))
    finite = actual.isfinite()
    accurate = ~finite | (expected.isfinite() & (no_worse | within)) | (
        ~expected.isfinite() & reference.isfinite() & within)
    return None if bool((agree & accurate).all()) else message + f"\n float64 {reference}"


def flatten_result(result):
    if isinstance(result, (list, tuple)):
        return [item for part in result for item in flatten_result(part)]
    return [result]


def run(case, bases):
    views = [item.view(base) for item, base in zip(case.inputs, bases)]
    try:
        result = case.function(*views)
        if bases and bases[0].device.type == "kiln":
            torch.kiln.synchronize()
        return views, result, None
    except Exception as error:  # noqa: BLE001 - every error is compared
        return views, None, error


def check_case(case):
    """Runs `case` on the CPU and on kiln; raises AssertionError naming the
    first difference."""
    global cases_run
    cases_run += 1
    originals = [item.base.clone() for item in case.inputs]
    cpu_bases = [item.base.clone() for item in case.inputs]
    kiln_bases = [item.base.to("kiln") for item in case.inputs]
    cpu_views, expected, cpu_error = run(case, cpu_bases)
    torch_kiln.clear_op_tracking()
    kiln_views, actual, kiln_error = run(case, kiln_bases)
    fallbacks = torch_kiln.get_fallback_ops()
    kiln_after = [base.cpu() for base in kiln_bases]
    if cpu_error is not None and any(message in str(cpu_error) for message in case.unspecified_errors):
        outcomes["excluded"] += 1
        reject()
    if cpu_error is not None:
        if kiln_error is None:
            raise AssertionError(f"{case.name}: the CPU raised {cpu_error!r}, kiln did not")
        if type(kiln_error) is not type(cpu_error):
            raise AssertionError(f"{case.name}: the CPU raised {cpu_error!r}, kiln {kiln_error!r}")
        for index, (original, cpu, kiln) in enumerate(zip(originals, cpu_bases, kiln_after)):
            if same_bits(original, cpu) and not same_bits(original, kiln):
                raise AssertionError(f"{case.name}: failed with {kiln_error!r} but changed input {index}: "
                                     f"{kiln} (was {original})")
        outcomes["error"] += 1
        return
    if kiln_error is not None:
        raise AssertionError(f"{case.name}: kiln raised {kiln_error!r}; the CPU returned {expected}") from kiln_error
    if fallbacks:
        raise AssertionError(f"{case.name}: ran on the CPU through the fallback: {fallbacks}")

    exact_run = []

    def exact_answer():
        if not exact_run:
            upcast_bases = [upcast(base.clone()) for base in originals]
            exact_case = Case(case.name, case.exact_function or case.function, case.inputs)
            views, result, error = run(exact_case, upcast_bases)
            exact_run.append((upcast_bases, None if error else flatten_result(result)))
        return exact_run[0]

    def magnitude_answer(index):
        absolute_bases = [upcast(base.clone()).abs() if base.is_floating_point() else base for base in originals]
        views, result, error = run(Case(case.name, case.magnitude_function, case.inputs), absolute_bases)
        items = None if error else flatten_result(result)
        return items[index] if items and items[index].shape == expected_items[index].shape else None

    expected_items, actual_items = flatten_result(expected), flatten_result(actual)
    if len(expected_items) != len(actual_items):
        raise AssertionError(f"{case.name}: {len(actual_items)} results, the CPU's {len(expected_items)}")
    for index, (first, second) in enumerate(zip(expected_items, actual_items)):
        if not isinstance(first, torch.Tensor):
            if not (first == second or (isinstance(first, float) and math.isnan(first) and math.isnan(second))):
                raise AssertionError(f"{case.name}: result {index} is {second!r}, the CPU's {first!r}")
            continue
        if not isinstance(second, torch.Tensor) or second.device.type != "kiln":
            raise AssertionError(f"{case.name}: result {index} is {second!r}, not a kiln tensor")
        for position, (cpu_view, kiln_view) in enumerate(zip(cpu_views, kiln_views)):
            if (first is cpu_view) != (second is kiln_view):
                raise AssertionError(f"{case.name}: result {index} is input {position} on one device only")
        difference = close(first, second.cpu(), lambda: (exact_answer()[1] or [None] * (index + 1))[index],
                           case.tolerance, (lambda: magnitude_answer(index)) if case.magnitude_function else None)
        if difference:
            raise AssertionError(f"{case.name}: result {index}: {difference}")
    for index, item in enumerate(case.inputs):
        if item.written:
            difference = close(cpu_bases[index], kiln_after[index], lambda: exact_answer()[0][index],
                               case.tolerance)
            if difference:
                raise AssertionError(f"{case.name}: written input {index} afterwards: {difference}")
        elif not same_bits(originals[index], kiln_after[index]):
            raise AssertionError(f"{case.name}: input {index} is not written but changed: "
                                 f"{kiln_after[index]} (was {originals[index]})")
    outcomes["result"] += 1


# ---------------------------------------------------------------------------
# Running families


def family_test(family, examples, derandomize=True, seed=None):
    """A Hypothesis test of `family` (a FAMILIES key) for `examples` examples."""
    draw_case = FAMILIES[family]

    @settings(max_examples=examples, deadline=None, derandomize=derandomize, database=None,
              suppress_health_check=list(HealthCheck), print_blob=True)
    @given(st.data())
    def fuzz(data):
        case = draw_case(data.draw)
        try:
            check_case(case)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{case.describe()}") from None

    fuzz.__name__ = f"fuzz_{family}"
    return hypothesis_seed(seed)(fuzz) if seed is not None else fuzz


def main(arguments=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=None,
                        help="run rounds until this much time has passed (default 600 without --examples)")
    parser.add_argument("--examples", type=int, default=None,
                        help="cases per family per round (default 100); without --seconds, one round")
    parser.add_argument("--seed", type=int, default=0, help="each round draws from a seed made of this one")
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated FAMILIES keys")
    options = parser.parse_args(arguments)
    warnings.filterwarnings("ignore")
    families = options.families.split(",")
    per_round = options.examples or 100
    seconds = options.seconds if options.seconds is not None else (0 if options.examples else 600)
    deadline = time.monotonic() + seconds
    failed = {}
    round_number = 0
    started = time.monotonic()
    while True:
        for family in families:
            if family in failed:
                continue
            try:
                family_test(family, per_round, derandomize=False, seed=options.seed * 100003 + round_number)()
            except Exception as error:  # noqa: BLE001 - report and go on with the other families
                failed[family] = error
                details = "\n".join(str(part) for part in getattr(error, "exceptions", [error]))
                print(f"[fuzz] {family}: FAILED (seed {options.seed}, round {round_number})\n{details}",
                      flush=True)
        round_number += 1
        print(f"[fuzz] round {round_number}: {cases_run} cases in {time.monotonic() - started:.0f} s", flush=True)
        if time.monotonic() >= deadline or len(failed) == len(families):
            break
    print(f"[fuzz] {cases_run} cases ({outcomes['result']} compared results, {outcomes['error']} "
          f"matched errors, {outcomes['excluded']} excluded), {round_number} rounds, {len(failed)} families with a difference"
          f"{': ' + ', '.join(failed) if failed else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
