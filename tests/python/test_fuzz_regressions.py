"""Regression tests for the differences the differential fuzzer (op_fuzz.py)
found between kiln and the CPU, each named after what broke. Each runs the
shrunk case on both devices."""
import pytest
import torch

from differential import assert_same


def outcome(function, device):
    """function(device)'s result on the CPU, or the type and message of its error."""
    try:
        return function(device).cpu()
    except Exception as error:  # noqa: BLE001 - the error is the outcome compared
        return type(error), str(error)


def assert_same_outcome(function):
    expected, actual = outcome(function, "cpu"), outcome(function, "kiln")
    if isinstance(expected, tuple):
        assert actual == expected
    else:
        assert isinstance(actual, torch.Tensor), actual
        assert_same(expected, actual.to("kiln"))


@pytest.mark.parametrize("index", [[0], [5], []])
def test_index_fill_checks_the_value_fits_before_the_indices(index):
    # The CPU converts the value to self's dtype first (even with nothing to
    # fill, or an index out of range): kiln filled inf, or raised IndexError.
    assert_same_outcome(lambda device: torch.ones(2, 1, device=device).index_fill(
        0, torch.tensor(index, dtype=torch.long, device=device), 1.7976931348623157e308))
    assert_same_outcome(lambda device: torch.ones(2, dtype=torch.int8, device=device).index_fill(
        0, torch.tensor(index, dtype=torch.long, device=device), 1000))


def test_scatter_value_checks_the_value_fits():
    assert_same_outcome(lambda device: torch.ones(2, dtype=torch.int8, device=device).scatter(
        0, torch.tensor([0], device=device), 1000))
    # With no index there is nothing to convert: no error on either.
    assert_same_outcome(lambda device: torch.ones(2, dtype=torch.int8, device=device).scatter(
        0, torch.tensor([], dtype=torch.long, device=device), 1000))


@pytest.mark.parametrize("function", [
    lambda device: torch.cumsum(torch.ones(1, device=device), -1, out=torch.empty(0, dtype=torch.bool, device=device)),
    lambda device: torch.cumprod(torch.ones(3, 2, device=device), 0, out=torch.empty(0, dtype=torch.bool, device=device)),
    lambda device: torch.cumsum(torch.ones(2, 1, device=device), 1, dtype=torch.bool),
    lambda device: torch.ones(3, dtype=torch.bool, device=device).cumsum_(0),
    # A 0-dim input is copied, not scanned: no error on either.
    lambda device: torch.cumsum(torch.ones((), device=device), 0, dtype=torch.bool),
], ids=["cumsum_out", "cumprod_out", "cumsum_dtype", "cumsum_", "zero_dim"])
def test_cumsum_and_cumprod_into_bool_raise_not_implemented(function):
    # The CPU kernel dispatches on the result's dtype, which has no bool:
    # kiln scanned into the bool result (a size-1 scan dim copied it).
    assert_same_outcome(function)


@pytest.mark.parametrize("exponent", [5e-324, -5e-324, 2.0000000001, 3.0000000001, 1e-46, 0.30000001])
@pytest.mark.parametrize("base", [-4.8, -0.0, 0.0, 2.5])
def test_pow_of_float32_takes_the_exponent_as_a_double(base, exponent):
    # ATen's CPU kernel raises a float32 base to the double exponent: a
    # negative base to 2.0000000001 is NaN and 0 to 5e-324 is 0, where kiln
    # rounded the exponent to float first (2 and 0: 23.04 and 1).
    assert_same_outcome(lambda device: torch.full((3,), base, device=device) ** exponent)
    assert_same_outcome(lambda device: torch.full((), base, device=device).pow_(exponent))


@pytest.mark.parametrize("function", [
    lambda device: torch.where(torch.tensor(False, device=device), 0.5, 1.7976931348623157e308),
    lambda device: torch.scalar_tensor(1e39, device=device),
    lambda device: torch.empty(1, device=device).fill_(1e39),
    # float16 and bfloat16 one-element fills cast (to inf) on the CPU as well.
    lambda device: torch.empty(1, dtype=torch.float16, device=device).fill_(1e10),
    lambda device: torch.scalar_tensor(1e300, dtype=torch.bfloat16, device=device),
], ids=["where_of_scalars", "scalar_tensor", "fill_one_element", "float16_fill", "bfloat16_scalar_tensor"])
def test_one_element_float32_fill_checks_that_the_value_fits(function):
    # Kiln cast every one-element float fill (giving inf), as the CPU's fast
    # path does only for float16 and bfloat16; float32 raises on the CPU.
    assert_same_outcome(function)


@pytest.mark.parametrize("function", [torch.softmax, torch.log_softmax])
@pytest.mark.parametrize("dim", [-3, -1])
def test_softmax_of_an_empty_integer_tensor_is_empty(function, dim):
    # The CPU returns before its kernel checks the dtype; kiln raised
    # NotImplementedError.
    assert_same_outcome(lambda device: function(torch.ones(0, 1, 1, dtype=torch.int64, device=device), dim))
    assert_same_outcome(lambda device: function(torch.ones(2, 1, dtype=torch.int64, device=device), dim + 1))


@pytest.mark.parametrize("shape, dim, index", [
    ((0, 1), -2, [0]),   # an empty self whose indexed dim is empty
    ((1, 0), 0, [1]),    # an empty self, the index out of range
    ((1, 0), 0, [0]),    # an empty self, the index in range: an empty result
    ((1, 1), -1, [-1]),  # dim 1 of rank 2 or more: the CPU's fast path checks
    ((2, 3, 1), 1, [3]),
    ((2, 3), 0, [5]),    # other dims keep IndexError
    ((0,), 0, [0]),      # as does rank 1
])
def test_index_select_raises_the_cpus_error_for_each_path(shape, dim, index):
    # The CPU raises RuntimeError (not IndexError) for an empty self of rank 2
    # or more and on its fast path for dim 1; kiln raised IndexError.
    assert_same_outcome(lambda device: torch.index_select(
        torch.ones(shape, device=device), dim, torch.tensor(index, device=device)))
    assert_same_outcome(lambda device: torch.index_select(
        torch.ones(shape, device=device), dim, torch.tensor(index, device=device),
        out=torch.empty(0, device=device)))


@pytest.mark.parametrize("shape, dim, index", [
    ((0,), 0, [0]), ((0, 3), 0, [0]), ((3, 0), 1, [0]),  # the CPU raises
    ((0, 3), 1, [0]), ((3, 0), 0, [0]), ((0,), 0, []),   # it does not
])
def test_index_fill_of_an_empty_tensor_raises_as_the_cpu(shape, dim, index):
    # An index into an empty dim of an empty tensor: the CPU's view of self
    # along dim needs storage self lacks and raises; kiln returned at once.
    assert_same_outcome(lambda device: torch.zeros(shape, dtype=torch.bfloat16, device=device).index_fill(
        dim, torch.tensor(index, dtype=torch.long, device=device), 0.5))


@pytest.mark.parametrize("threshold, value", [(0.5, 3.4e38), (3.4e38, 0.5), (0.5, 1.0)])
def test_threshold_checks_that_the_value_fits_float16(threshold, value):
    # The CPU converts the value (not the threshold) to float16 with its
    # overflow check; kiln computed with the value as float32.
    assert_same_outcome(lambda device: torch.nn.functional.threshold(
        torch.full((2,), 4.62, dtype=torch.float16, device=device), threshold, value))


@pytest.mark.parametrize("dtype, value", [(torch.int8, 255), (torch.float16, 1e10), (torch.int8, 7)])
def test_fill_of_an_empty_tensor_checks_that_the_value_fits(dtype, value):
    # Kiln returned before converting the value; the CPU raises for an empty
    # tensor as for any other.
    assert_same_outcome(lambda device: torch.empty(0, dtype=dtype, device=device).fill_(value))


@pytest.mark.parametrize("out_dtype", [torch.int64, torch.bool, torch.float16])
@pytest.mark.parametrize("dim", [[], 0])
def test_mean_into_an_integral_out_raises(out_dtype, dim):
    # The CPU sums into out= and divides it in place, which an integral or
    # bool out cannot take; kiln wrote the truncated mean.
    assert_same_outcome(lambda device: torch.mean(
        torch.full((1, 1, 1), 4.62, device=device), dim=dim, out=torch.empty(0, dtype=out_dtype, device=device)))


@pytest.mark.parametrize("shape, index, alpha", [
    ((1, 1), [-1], 2),   # rank 2, alpha other than 1: IndexError
    ((3, 4), [3], 0.5),
    ((3, 4), [3], 1),    # rank 2, alpha 1: RuntimeError naming the index
    ((0,), [0], 1),      # rank 1, empty: IndexError
    ((), [1], 1),        # rank 0: IndexError
    ((0, 4), [5], 2),    # rank 2, empty: nothing checked
])
def test_index_add_raises_the_cpus_error_for_each_path(shape, index, alpha):
    source_shape = (len(index),) + shape[1:] if shape else ()
    assert_same_outcome(lambda device: torch.index_add(
        torch.ones(shape, device=device), 0, torch.tensor(index, device=device),
        torch.ones(source_shape, device=device), alpha=alpha))


@pytest.mark.parametrize("shape, keywords", [
    ((), {}),
    ((1,), {"ord": 3}),
    ((2, 1), {"dim": 1}),
    ((2, 1), {"dim": -1, "keepdim": True, "ord": 0}),
    ((1, 2), {"dim": 0, "dtype": torch.float64}),
    ((2, 2), {"dim": 0}),  # two elements: inf on both, x*x overflows
])
def test_vector_norm_over_single_elements_is_their_absolute_value(shape, keywords):
    # The CPU takes |x| where every reduced dim has size 1; kiln squared
    # float32's largest value and got inf.
    assert_same_outcome(lambda device: torch.linalg.vector_norm(
        torch.full(shape, -3.4028234663852886e38, device=device), **keywords))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("weight_is_tensor", [True, False])
def test_lerp_does_not_overflow_where_the_cpus_fused_multiply_add_does_not(dtype, weight_is_tensor):
    # lerp(4.62, max, -1) = max - 2 * (max - 4.62): the CPU's fused
    # multiply-add gives -max; kiln rounded the product first and got -inf.
    largest = torch.finfo(dtype).max

    def lerp(device):
        start = torch.full((3,), 4.62, dtype=dtype, device=device)
        end = torch.full((3,), largest, dtype=dtype, device=device)
        weight = torch.full((3,), -1.0, dtype=dtype, device=device) if weight_is_tensor else -1.0
        return torch.lerp(start, end, weight)
    assert_same_outcome(lerp)


def test_lerp_of_float32_matches_the_cpu_bit_for_bit():
    generator = torch.Generator().manual_seed(0)
    start, end = (torch.randn(4096, generator=generator) * 100 for _ in range(2))
    weight = torch.rand(4096, generator=generator) * 3 - 1
    expected = torch.lerp(start, end, weight)
    actual = torch.lerp(start.to("kiln"), end.to("kiln"), weight.to("kiln")).cpu()
    assert torch.equal(actual, expected)


@pytest.mark.parametrize("shape, index, accumulate", [
    ((1, 0), [1], False), ((1, 0), [1], True), ((2, 0), [5], False),  # nothing to write: no error
    ((0, 3), [1], False), ((0, 0), [1], False), ((3,), [5], True),     # errors on both
])
def test_index_put_and_index_read_no_index_when_nothing_is_written(shape, index, accumulate):
    # The CPU checks an index as its kernel reaches it; kiln checked them all
    # first and raised for an empty slice.
    assert_same_outcome(lambda device: torch.zeros(shape, device=device).index_put(
        (torch.tensor(index, device=device),), torch.ones(1, device=device), accumulate=accumulate))
    assert_same_outcome(lambda device: torch.zeros(shape, device=device)[torch.tensor(index, device=device)])


@pytest.mark.parametrize("out_dtype", [torch.int64, torch.bool, torch.float16])
@pytest.mark.parametrize("rows", [0, 2])
def test_nansum_into_an_integral_out_raises_not_implemented(out_dtype, rows):
    # The CPU's kernel dispatches on the result's dtype (floating only) when
    # there is something to sum; kiln summed into it.
    assert_same_outcome(lambda device: torch.nansum(
        torch.ones(rows, 1, device=device), dim=[], out=torch.empty(0, dtype=out_dtype, device=device)))


SCALAR_OPERATIONS = {
    "add": torch.add, "sub": torch.sub, "remainder": torch.remainder, "fmod": torch.fmod, "eq": torch.eq,
    "lt": torch.lt, "xlogy": torch.xlogy, "mul": torch.mul, "div": torch.div, "floor_divide": torch.floor_divide,
    "div_trunc": lambda x, y: torch.div(x, y, rounding_mode="trunc"), "pow": torch.pow,
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("scalar", [0.1, 1 / 3, 1.1, 1e5, 3.4e38])
@pytest.mark.parametrize("name", sorted(SCALAR_OPERATIONS))
@pytest.mark.parametrize("scalar_first", [False, True])
def test_half_precision_ops_read_a_python_scalar_as_the_cpu_does(dtype, scalar, name, scalar_first):
    # ATen's CPU kernels convert a Python scalar to a float16/bfloat16
    # tensor's dtype, except the second operand of mul and the divisions,
    # whose original value they keep: half(-inf) + 3.4e38 is NaN and
    # fmod(half(5), 0.1) is 0.00122 on the CPU. Kiln kept every scalar's
    # original value; now the results agree bit for bit.
    operation = SCALAR_OPERATIONS[name]
    values = [torch.tensor(0.1, dtype=dtype).item(), 1e-3, -2.0, 5.0, 0.3, 0.7, 1.1, 1 / 3, float("-inf"),
              float("inf"), 0.0]

    def run(device):
        x = torch.tensor(values, dtype=dtype, device=device)
        return operation(scalar, x) if scalar_first else operation(x, scalar)
    expected, actual = outcome(run, "cpu"), outcome(run, "kiln")
    if isinstance(expected, tuple):
        assert actual == expected
        return
    assert torch.equal(expected.isnan(), actual.isnan())
    assert torch.equal(expected[~expected.isnan()], actual[~actual.isnan()]), (expected, actual)


@pytest.mark.parametrize("values", [[1e5], [1e5, 1.0], [70000.0, 1.0], [0.1, 0.2, 0.3]])
@pytest.mark.parametrize("how", ["out", "dtype"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_mean_into_a_half_precision_result_sums_in_float32(values, how, dtype):
    # The CPU sums and divides a float32 input in float32 and rounds the mean
    # once; kiln converted the input to float16 first and overflowed to inf.
    def mean(device):
        source = torch.tensor(values, device=device)
        if how == "out":
            return torch.mean(source, dim=0, out=torch.empty(0, dtype=dtype, device=device))
        return torch.mean(source, dim=0, dtype=dtype)
    assert_same_outcome(mean)


@pytest.mark.parametrize("function", [torch.var, torch.std])
def test_variance_into_outs_of_two_dtypes_in_turn(function):
    # The first pass's kernel (the mean) converts the input to the result's
    # dtype, but its cache key did not name that dtype: after a float64 out=,
    # a float16 out= reused the float64 kernel (inf, not the CPU's NaN), and
    # the reverse gave inf where 0 is due.
    for out_dtype in (torch.float64, torch.float16, torch.float64, torch.bfloat16, torch.float32):
        assert_same_outcome(lambda device: function(
            torch.tensor([3.4028234663852886e38, 3.0e38], device=device)[:1].squeeze(), dim=[], correction=0,
            out=torch.empty(0, dtype=out_dtype, device=device)))


def test_pointwise_kernels_of_two_common_dtypes_are_not_shared():
    # half.div_(float32, trunc): a 0-dim divisor leaves the common dtype
    # float16 (the quotient is rounded to half before the truncation), a
    # 1-element one makes it float32. The kernel key did not name the common
    # dtype, so whichever ran first served both: 482 where the CPU gives 481.
    def divide(device):
        base = torch.tensor([9.0, 0.80078125, 9.0, 1.8642578125, 9.0], dtype=torch.float16, device=device)
        divisor = torch.tensor([0.0038678788114339113], device=device).view(1, 1, 1, 1)
        return base.view(1, 1, 1, 5)[..., 1::2].div_(divisor, rounding_mode="trunc")
    torch.tensor([1.0], dtype=torch.float16, device="kiln").view(1, 1, 1, 1).div_(
        torch.tensor(3.0, device="kiln"), rounding_mode="trunc")  # compiles the float16-common kernel first
    assert_same_outcome(divide)
