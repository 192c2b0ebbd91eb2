"""Compiled binary and comparison ops, differentially against the CPU."""
import pytest
import torch

from differential import ALL, FLOATING, INTEGRAL, check, compiled_only, make, variants

ARITHMETIC = [torch.add, torch.sub, torch.mul, torch.maximum, torch.minimum]
COMPARISONS = [torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge,
               torch.logical_and, torch.logical_or, torch.logical_xor]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", ARITHMETIC + COMPARISONS, ids=lambda op: op.__name__)
def test_layouts(op, dtype):
    for name, left in variants((5, 7), dtype):
        right = make(left.shape, dtype)
        compiled_only(lambda: check(op, left, right, message=f"{op.__name__} {dtype} {name}"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_broadcast_and_scalars(dtype):
    x = make((4, 1, 6), dtype)
    y = make((3, 1), dtype)
    check(torch.add, x, y, message="broadcast")
    check(torch.mul, x, 3, message="python int")
    check(torch.add, x, 2.5, message="python float promotes")
    check(torch.sub, x, torch.tensor(2), message="0-dim CPU tensor")
    check(lambda a, b: a + b, make((), dtype), x, message="0-dim device tensor")
    check(torch.add, x, y, alpha=2, message="alpha")


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", COMPARISONS[:6], ids=lambda op: op.__name__)
def test_comparisons_with_a_scalar(op, dtype):
    name = op.__name__
    for layout, x in variants((5, 7), dtype):
        for other in [1, -0.5, True]:
            compiled_only(lambda: check(op, x, other, message=f"{name} {layout} {other!r}"))
        compiled_only(lambda: check(lambda a: getattr(a.clone(), name + "_")(1), x,
                                    message=f"{name}_ {layout}"))
        compiled_only(lambda: check(
            lambda a: op(a, 2, out=torch.empty(0, dtype=torch.float32, device=a.device)), x,
            message=f"{name} out= float32 {layout}"))
    special = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0])
    if dtype.is_floating_point:
        for other in [float("nan"), float("inf"), 0.0]:
            check(op, special.to(dtype), other, message=f"{name} special {other}")


def test_mixed_dtypes_promote():
    check(torch.add, make((8,), torch.int32), make((8,), torch.float16))
    check(torch.mul, make((8,), torch.bfloat16), make((8,), torch.float32))
    check(torch.eq, make((8,), torch.int64), make((8,), torch.float64))


@pytest.mark.parametrize("dtype", FLOATING + INTEGRAL)
def test_in_place_and_out(dtype):
    def in_place(a, b):
        a = a.clone()
        a.mul_(b)
        return a

    def out_form(a, b):
        out = torch.empty(0, dtype=a.dtype, device=a.device)
        torch.sub(a, b, out=out)
        return out

    for name, left in variants((6, 5), dtype):
        right = make(left.shape, dtype)
        check(in_place, left, right, message=name)
        check(out_form, left, right, message=name)


@pytest.mark.parametrize("dtype", FLOATING + INTEGRAL)
@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_division(dtype, mode):
    numerator = make((40,), dtype, low=-20, high=20)
    denominator = make((40,), dtype, low=1, high=6) * (1 if dtype != torch.bool else 1)
    denominator = torch.where(torch.arange(40) % 2 == 0, denominator, -denominator).to(dtype)
    check(torch.div, numerator, denominator, rounding_mode=mode)
    check(torch.remainder, numerator, denominator)
    check(torch.fmod, numerator, denominator)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_bitwise_and_shifts(dtype):
    a = make((32,), dtype, low=-100, high=100)
    b = make((32,), dtype, low=0, high=8)
    for op in [torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor,
               torch.bitwise_left_shift, torch.bitwise_right_shift]:
        check(op, a, b, message=op.__name__)


def test_float_math_binary():
    a = make((33,), torch.float32)
    b = make((33,), torch.float32, low=0.5, high=2.0)
    for op in [torch.atan2, torch.copysign, torch.hypot]:
        check(op, a, b, message=op.__name__)
    check(torch.pow, b, a)
    check(torch.atan2, make((5,), torch.int64), make((5,), torch.int64), message="int promotes to float")


def test_nan_propagation_in_maximum():
    a = torch.tensor([1.0, float("nan"), 3.0])
    b = torch.tensor([2.0, 1.0, float("nan")])
    check(torch.maximum, a, b)
    check(torch.minimum, a, b)


def test_errors_match_cpu():
    check(torch.sub, make((3,), torch.bool), make((3,), torch.bool), message="bool sub")
    check(lambda a, b: a.add_(b), make((3,), torch.int64), make((3,), torch.float32),
          message="unsafe in-place cast")
    with pytest.raises(RuntimeError, match="same device"):
        torch.add(make((3,), torch.float32).to("kiln"), make((3,), torch.float32))


def test_one_kernel_serves_every_shape():
    import torch_kiln
    a = make((3, 4), torch.float32).to("kiln")
    b = make((3, 4), torch.float32).to("kiln")
    torch.add(a, b)  # warm
    before = torch_kiln.compiler_stats()["kernels_compiled"] + torch_kiln.compiler_stats()["disk_hits"]
    for size in [1, 7, 100, 1000]:
        torch.add(make((size,), torch.float32).to("kiln"), make((size,), torch.float32).to("kiln"))
    after = torch_kiln.compiler_stats()["kernels_compiled"] + torch_kiln.compiler_stats()["disk_hits"]
    assert after == before


def _operands(name, dtype, shape):
    """Operands `name` accepts on both devices: nonzero divisors, shift
    amounts within the width, small non-negative exponents."""
    left = make(shape, dtype)
    if name in ("remainder", "fmod", "floor_divide", "div"):
        right = make(shape, dtype, low=1, high=4)
        if dtype != torch.bool and dtype != torch.uint8:
            right = torch.where(make(shape, torch.bool), right, -right)
    elif name in ("bitwise_left_shift", "bitwise_right_shift"):
        right = make(shape, dtype, low=0, high=7)
    elif name == "pow":
        right = make(shape, dtype, low=0, high=3)
    else:
        right = make(shape, dtype)
    return left, right


EVERY_BINARY = ["add", "sub", "mul", "div", "remainder", "fmod", "floor_divide", "pow", "atan2",
                "copysign", "hypot", "maximum", "minimum", "bitwise_and", "bitwise_or",
                "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "eq", "ne", "lt",
                "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("name", EVERY_BINARY)
def test_every_binary_op_over_layouts_in_place_and_out(name, dtype):
    # Where the CPU refuses a dtype (bitwise ops on floats, sub on bool, ...),
    # kiln must raise the same error type: check() asserts it.
    op = getattr(torch, name)
    for layout, left in variants((5, 6), dtype):
        left, right = _operands(name, dtype, tuple(left.shape)) if layout in (
            "zero_size", "zero_dim") else (left, _operands(name, dtype, tuple(left.shape))[1])
        if layout == "transposed":
            right = right.t().contiguous().t()
        compiled_only(lambda: check(op, left, right, message=f"{layout}"))
    left, right = _operands(name, dtype, (4, 6))
    compiled_only(lambda: check(op, left, right[:1], message="broadcast"))
    compiled_only(lambda: check(op, left, right[0, 0].item(), message="python scalar"))

    def in_place(a, b):
        a = a.clone()
        getattr(a, name + "_")(b)
        return a

    def out_form(a, b):
        return op(a, b, out=torch.empty(0, dtype=a.dtype, device=a.device))

    compiled_only(lambda: check(in_place, left, right, message="in place"))
    compiled_only(lambda: check(out_form, left, right, message="out="))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.bool])
def test_python_operators_with_a_number_on_either_side(dtype):
    # Reverse operators reach ATen with the number first (remainder.Scalar_Tensor);
    # << and >> are ATen's __lshift__/__rshift__ (and __ilshift__/__irshift__).
    for layout, x in variants((4, 5), dtype):
        if dtype != torch.bool:
            x = x.abs() + 1  # nonzero divisors, non-negative shifts
        cases = {"2 % x": lambda a: 2 % a, "2 // x": lambda a: 2 // a, "2 - x": lambda a: 2 - a,
                 "x << 2": lambda a: a << 2, "x >> 1": lambda a: a >> 1,
                 "3 << x": lambda a: 3 << a, "x << x": lambda a: a << a, "x >> x": lambda a: a >> a}
        if dtype == torch.bool:  # False divisors: the CPU raises ZeroDivisionError
            del cases["2 % x"], cases["2 // x"]
        for name, fn in cases.items():
            compiled_only(lambda: check(fn, x, message=f"{name} {layout}"))

        def shift_in_place(a):
            a = a.clone()
            a <<= 1
            a >>= a.clone().fill_(1) if a.numel() else a
            return a

        compiled_only(lambda: check(shift_in_place, x, message=f"<<= >>= {layout}"))
