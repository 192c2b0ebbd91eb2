"""How the OpInfo sweep compares kiln's results with the CPU's.

A result first has to match at torch.testing.assert_close's default tolerance
for its dtype. If it does not, it may still match at a tolerance PyTorch itself
accepts between two devices' kernels for the same op:

- the OpInfo's own toleranceOverride for that dtype, from a decorator of a test
  that compares two implementations (test_compare_cpu, the MPS backend's
  test_output_match, Inductor's test_comprehensive, or an unnamed test), for
  any device type: kiln's kernels are such a second implementation;
- for float16 and bfloat16 only, the atol = rtol = 1e-3 that PyTorch's
  TestCommon.test_compare_cpu uses for every op (never narrower than the
  dtype's default, which for bfloat16 allows 1.6e-2): a half-precision result is
  rounded once per stored intermediate, and kiln keeps intermediates in float32
  where the CPU kernel may round them.

A floating result that misses all of these still matches when it is no
further from the float64 answer than twice the CPU's own error
(as_accurate_as_cpu): both are roundings of one true answer, and kiln may keep
an intermediate in more precision than the CPU kernel, or the reverse (a half
result rounded once instead of per step; a float32 gradient formula that
amplifies a last-bit difference of its forward).

float32 and float64 never get the flat 1e-3: a kiln kernel computes the same
expression in the same precision as the CPU, so a wider difference is a bug
unless the OpInfo says otherwise or kiln is as close to the true answer as the
CPU is. Each comparison reports the tolerance it needed, and the report counts
the pairs that needed a wider one.
"""
import torch
import torch.utils._pytree as pytree
from torch.testing._comparison import default_tolerances
from torch.testing._internal.common_device_type import toleranceOverride
from torch.testing._internal.opinfo.core import DecorateInfo

# Tests whose tolerance overrides are about two implementations of one op.
CROSS_IMPLEMENTATION_TESTS = {None, "test_compare_cpu", "test_output_match",
                              "test_output_grad_match", "test_comprehensive"}

# TestCommon.test_compare_cpu's tolerance, used for the half-precision dtypes.
COMPARE_CPU_TOLERANCE = (1e-3, 1e-3)
HALF_PRECISION = {torch.float16, torch.bfloat16}
# The dtypes whose results may be judged against a float64 answer.
UPCAST = {torch.float16, torch.bfloat16, torch.float32}


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
        rtol, atol = default_tolerances(dtype)
        tolerances.append(("compare_cpu", max(atol, COMPARE_CPU_TOLERANCE[0]),
                           max(rtol, COMPARE_CPU_TOLERANCE[1])))
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


def compare(actual, expected, tolerances, accuracy_check=None):
    """The name of the first tolerance at which `actual` (on the CPU already)
    matches `expected`: "default", or a name from `tolerances`, or
    "as_accurate_as_cpu" when none does but `accuracy_check()` holds. Raises
    the default comparison's error otherwise."""
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
        if accuracy_check is not None and accuracy_check():
            return "as_accurate_as_cpu"
        raise default_error


def _errors(result, exact):
    """The largest absolute error of each floating tensor of `result` against `exact`."""
    pairs = zip(pytree.tree_leaves(result), pytree.tree_leaves(exact))
    return [(value.double() - truth.double()).abs().nan_to_num(0.0, 0.0, 0.0).max().item()
            if value.numel() else 0.0
            for value, truth in pairs
            if isinstance(value, torch.Tensor) and value.is_floating_point()]


def upcast_to_double(value):
    """A CPU float64 copy of a floating tensor (other values as they are)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.double() if value.dtype in UPCAST else value
    return value


def as_accurate_as_cpu(op, sample, actual, expected):
    """For a floating sample that missed every tolerance: True when kiln's
    result is no further from the float64 answer than twice the CPU's own
    error. The float64 answer is the op run on the CPU with the sample's
    floating tensors upcast."""
    try:
        exact = sample.output_process_fn_grad(run_op(op, sample.transform(upcast_to_double)))
    except Exception:  # noqa: BLE001 - no float64 form of this op or sample
        return False
    return no_less_accurate(actual, expected, exact)


def no_less_accurate(actual, expected, exact):
    kiln_errors, cpu_errors = _errors(actual, exact), _errors(expected, exact)
    if not kiln_errors or len(kiln_errors) != len(cpu_errors):
        return False
    return all(kiln <= 2 * cpu + 1e-6 for kiln, cpu in zip(kiln_errors, cpu_errors))


def run_op(op, sample):
    return op(sample.input, *sample.args, **sample.kwargs)
