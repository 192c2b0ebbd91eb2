"""How the OpInfo sweep compares kiln's results with the CPU's.

A result first has to match at torch.testing.assert_close's default tolerance
for its dtype. If it does not, it may still match at a tolerance PyTorch itself
accepts between two devices' kernels for the same op:

- the OpInfo's own toleranceOverride for that dtype, from a decorator of a test
  that compares two implementations (test_compare_cpu, the MPS backend's
  test_output_match, Inductor's test_comprehensive, or an unnamed test), for
  any device type: kiln's kernels are such a second implementation;
- for float16 and bfloat16 only, the atol = rtol = 1e-3 that PyTorch's
  TestCommon.test_compare_cpu uses for every op: a half-precision result is
  rounded once per stored intermediate, and kiln keeps intermediates in float32
  where the CPU kernel may round them.

float32 and float64 never get the flat 1e-3: a kiln kernel computes the same
expression in the same precision as the CPU, so a wider difference is a bug
unless the OpInfo says otherwise. Each comparison reports the tolerance it
needed, and the report counts the pairs that needed a wider one.
"""
import torch
import torch.utils._pytree as pytree
from torch.testing._internal.common_device_type import toleranceOverride
from torch.testing._internal.opinfo.core import DecorateInfo

# Tests whose tolerance overrides are about two implementations of one op.
CROSS_IMPLEMENTATION_TESTS = {None, "test_compare_cpu", "test_output_match",
                              "test_output_grad_match", "test_comprehensive"}

# TestCommon.test_compare_cpu's tolerance, used for the half-precision dtypes.
COMPARE_CPU_TOLERANCE = (1e-3, 1e-3)
HALF_PRECISION = {torch.float16, torch.bfloat16}


def opinfo_tolerance(op, dtype, for_gradients=False):
    """(atol, rtol): the widest toleranceOverride the OpInfo declares for
    `dtype` on a cross-implementation test, or None."""
    wanted = set(CROSS_IMPLEMENTATION_TESTS)
    if not for_gradients:
        wanted.discard("test_output_grad_match")
    widest = None
    for decorator_info in op.decorators:
        if not isinstance(decorator_info, DecorateInfo) or decorator_info.test_name not in wanted:
            continue
        if decorator_info.dtypes is not None and dtype not in decorator_info.dtypes:
            continue
        for decorator in decorator_info.decorators:
            if isinstance(decorator, toleranceOverride) and dtype in decorator.d:
                override = decorator.d[dtype]
                if widest is None:
                    widest = (override.atol, override.rtol)
                else:
                    widest = (max(widest[0], override.atol), max(widest[1], override.rtol))
    return widest


def wider_tolerances(op, dtype, for_gradients=False):
    """[(name, atol, rtol)]: the tolerances tried after the default one, narrowest first."""
    tolerances = []
    declared = opinfo_tolerance(op, dtype, for_gradients)
    if declared is not None:
        tolerances.append(("opinfo", *declared))
    if dtype in HALF_PRECISION:
        tolerances.append(("compare_cpu", *COMPARE_CPU_TOLERANCE))
    return tolerances


def processed(sample, result):
    """The result as OpInfo wants it compared: output_process_fn_grad
    normalizes results that are only defined up to a choice (the signs of
    singular vectors, say)."""
    return sample.output_process_fn_grad(result)


def to_cpu(result):
    return pytree.tree_map(
        lambda value: value.cpu() if isinstance(value, torch.Tensor) else value, result)


def check_on_kiln(result):
    for value in pytree.tree_leaves(result):
        if isinstance(value, torch.Tensor) and value.device.type != "kiln":
            raise AssertionError(f"a result is on {value.device}, not on kiln")


def compare(actual, expected, tolerances):
    """The name of the first tolerance at which `actual` (on the CPU already)
    matches `expected`: "default", or a name from `tolerances`. Raises the
    default comparison's error when none matches."""
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True, check_device=False)
        return "default"
    except Exception as default_error:  # noqa: BLE001 - assert_close raises several types
        for name, atol, rtol in tolerances:
            try:
                torch.testing.assert_close(actual, expected, equal_nan=True, check_device=False,
                                           atol=atol, rtol=rtol)
                return name
            except Exception:  # noqa: BLE001
                continue
        raise default_error
