"""The differential fuzzer against the CPU (op_fuzz.py), in CI: each op family
for a fixed number of derandomized examples (the same cases on every run), one
test per family so pytest-xdist spreads them over the cores. `make fuzz` runs
it for as long as asked, with fresh seeds."""
import pytest

import op_fuzz

# Cases per family: the whole file costs about 40 s of CPU time (user and
# system, 43 s wall under -n 2) on a 2-core machine with an empty kernel
# cache, 30 s with a warm one; the budget is 60 s.
EXAMPLES = 150


@pytest.mark.parametrize("family", sorted(op_fuzz.FAMILIES))
def test_fuzz_family_matches_cpu(family):
    op_fuzz.family_test(family, EXAMPLES, derandomize=True)()


def on_kiln(tensor):
    return tensor.device.type == "kiln"


def raise_error(error_type):
    raise error_type("deliberate")


@pytest.mark.parametrize("function, message", [
    (lambda x: -x + 1 if on_kiln(x) else -x, "result 0"),
    (lambda x: (x.double() if on_kiln(x) else x).neg(), "dtype/shape"),
    (lambda x: raise_error(RuntimeError) if on_kiln(x) else -x, "kiln raised"),
    (lambda x: raise_error(TypeError if on_kiln(x) else ValueError), "the CPU raised"),
    (lambda x: (x.add_(1), x.clone())[1] if on_kiln(x) else x + 1, "not written but changed"),
    (lambda x: x if on_kiln(x) else x.clone(), "on one device only"),
], ids=["value", "dtype", "kiln_raises", "error_type", "input_changed", "aliasing"])
def test_check_case_reports_each_kind_of_difference(function, message):
    """The checker itself: each difference it exists to find fails the case."""
    case = op_fuzz.Case("deliberately different", function,
                        [op_fuzz.Input(op_fuzz.torch.ones(3), lambda tensor: tensor, "contiguous")])
    with pytest.raises(AssertionError, match=message):
        op_fuzz.check_case(case)
