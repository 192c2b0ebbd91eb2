"""Compiled unary ops (math, rounding, sign and bit ops, predicates, clamp),
differentially against the CPU."""
import pytest
import torch

from differential import ALL, FLOATING, INTEGRAL, check, compiled_only, make, variants

# Inputs inside each function's domain, so half-precision results near a pole
# or a branch cut do not decide the comparison.
DOMAINS = {
    "log": (0.1, 5.0), "log2": (0.1, 5.0), "log10": (0.1, 5.0), "sqrt": (0.1, 5.0),
    "rsqrt": (0.1, 5.0), "reciprocal": (0.1, 5.0), "log1p": (-0.9, 5.0),
    "asin": (-0.95, 0.95), "acos": (-0.95, 0.95), "atanh": (-0.95, 0.95),
    "acosh": (1.1, 5.0), "lgamma": (0.2, 5.0),
}

FLOAT_FUNCTIONS = [
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "erf", "erfc", "lgamma", "sigmoid",
]
# Ops that keep the dtype (and accept integers and/or bool, or refuse them as
# the CPU does).
KEEPING = ["abs", "neg", "sign", "sgn", "floor", "ceil", "round", "trunc", "frac",
           "bitwise_not", "logical_not", "isnan", "isinf", "nan_to_num", "square"]
SMALL_INTEGERS = [torch.uint8, torch.int8, torch.int16]


def domain(name):
    low, high = DOMAINS.get(name, (-3.0, 3.0))
    return {"low": low, "high": high}


@pytest.mark.parametrize("name", FLOAT_FUNCTIONS)
def test_float_functions_over_dtypes(name):
    op = getattr(torch, name)
    for dtype in ALL:
        x = make((33,), dtype, **domain(name))
        compiled_only(lambda: check(op, x, message=f"{name} {dtype}"))


@pytest.mark.parametrize("name", FLOAT_FUNCTIONS)
def test_float_functions_layouts(name):
    op = getattr(torch, name)
    for layout, x in variants((5, 7), torch.float32, **domain(name)):
        compiled_only(lambda: check(op, x, message=f"{name} {layout}"))


@pytest.mark.parametrize("name", KEEPING)
@pytest.mark.parametrize("dtype", ALL + SMALL_INTEGERS)
def test_dtype_keeping_ops(name, dtype):
    op = getattr(torch, name)
    x = make((6, 5), dtype, low=-4, high=4)
    compiled_only(lambda: check(op, x, message=f"{name} {dtype}"))


@pytest.mark.parametrize("name", KEEPING)
def test_dtype_keeping_ops_layouts(name):
    op = getattr(torch, name)
    for dtype in [torch.float32, torch.int64]:
        for layout, x in variants((5, 7), dtype, low=-4, high=4):
            check(op, x, message=f"{name} {dtype} {layout}")


SPECIAL = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5,
           1e30, -1e30, 1e-30, 65504.0, 70000.0, 3.0e38]


@pytest.mark.parametrize("dtype", FLOATING)
def test_special_values(dtype):
    x = torch.tensor(SPECIAL, dtype=torch.float64).to(dtype)
    for name in FLOAT_FUNCTIONS + ["abs", "neg", "sign", "sgn", "floor", "ceil", "round",
                                   "trunc", "frac", "isnan", "isinf", "nan_to_num"]:
        check(getattr(torch, name), x, message=f"{name} {dtype}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_in_place_and_out(dtype):
    for name in ["exp", "abs", "neg", "floor", "sigmoid", "bitwise_not", "logical_not",
                 "nan_to_num", "round"]:
        op = getattr(torch, name)
        in_place = getattr(torch.Tensor, name + "_")

        def run_in_place(x):
            x = x.clone()
            in_place(x)
            return x

        def run_out(x):
            out = torch.empty(0, dtype=op(x[:0]).dtype if x.numel() else x.dtype, device=x.device)
            return op(x, out=out)

        for layout, x in variants((4, 6), dtype):
            check(run_in_place, x, message=f"{name}_ {dtype} {layout}")
            check(run_out, x, message=f"{name} out= {dtype} {layout}")


def test_out_dtype_differs():
    x = make((9,), torch.float16)
    # float16 math written to a float32 out: rounded to float16 first, as the
    # CPU computes into a float16 temporary.
    check(lambda a: torch.exp(a, out=torch.empty(9, dtype=torch.float32, device=a.device)), x)
    check(lambda a: torch.logical_not(a, out=torch.empty(9, dtype=torch.int32, device=a.device)), x)
    check(lambda a: torch.exp(a, out=torch.empty(9, dtype=torch.int64, device=a.device)), x,
          message="unsafe cast raises")
    check(lambda a: a.exp_(), make((4,), torch.int64), message="integer in-place exp raises")


def test_round_decimals():
    x = make((40,), torch.float32, low=-500, high=500)
    for decimals in [-2, -1, 0, 1, 3]:
        check(torch.round, x, decimals=decimals, message=f"decimals={decimals}")
    for dtype in [torch.float16, torch.bfloat16, torch.float64, torch.int64]:
        check(torch.round, make((8,), dtype, low=-50, high=50), decimals=1, message=str(dtype))
        check(torch.round, make((8,), dtype, low=-50, high=50), decimals=0, message=str(dtype))
    check(lambda a: a.clone().round_(decimals=2), x)
    check(torch.round, torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5]), message="half to even")


def test_nan_to_num_arguments():
    x = torch.tensor([float("nan"), float("inf"), float("-inf"), 1.0, -2.0])
    for dtype in FLOATING:
        y = x.to(dtype)
        check(torch.nan_to_num, y, message=f"{dtype} defaults")
        check(torch.nan_to_num, y, nan=7.0, posinf=1e10, neginf=-3.0, message=f"{dtype} given")
    check(lambda a: torch.nan_to_num(a, out=torch.empty(0, dtype=torch.float64, device=a.device)),
          x, message="out dtype mismatch raises")


@pytest.mark.parametrize("dtype", FLOATING + INTEGRAL + SMALL_INTEGERS + [torch.bool])
def test_clamp_scalar(dtype):
    x = make((6, 7), dtype, low=-5, high=5)
    for low, high in [(-1, 2), (None, 1), (-2, None), (2, -2), (0.5, 1.5)]:
        compiled_only(lambda: check(torch.clamp, x, low, high, message=f"{dtype} {low} {high}"))
    check(torch.clamp_min, x, 1, message="clamp_min")
    check(torch.clamp_max, x, 1, message="clamp_max")
    check(torch.relu, x, message="relu")


def test_clamp_checks_and_nan():
    x = torch.tensor([float("nan"), -3.0, 0.0, 3.0])
    check(torch.clamp, x, -1.0, 1.0, message="NaN input stays NaN")
    check(torch.clamp, x, float("nan"), 1.0, message="NaN bound")
    check(torch.clamp_min, x, float("nan"), message="NaN min")
    check(torch.clamp, x, message="neither bound raises")
    check(torch.clamp, torch.tensor([1, 2], dtype=torch.uint8), -1, 300, message="overflow raises")
    check(lambda a: a.clone().clamp_(0.5, 1.5), torch.tensor([0, 1, 2]), message="in-place promotion raises")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.bool])
def test_clamp_tensor(dtype):
    x = make((5, 6), dtype, low=-5, high=5)
    low = make((5, 1), dtype, low=-3, high=0)
    high = make((6,), dtype, low=0, high=3)
    check(torch.clamp, x, low, high, message="both")
    check(torch.clamp, x, low, None, message="min")
    check(torch.clamp, x, None, high, message="max")
    check(torch.clamp_min, x, low, message="clamp_min")
    check(torch.clamp_max, x, high, message="clamp_max")
    check(lambda a, b: a.clone().clamp_(min=b), x, low, message="in-place")
    check(lambda a, b, c: torch.clamp(a, b, c, out=torch.empty(0, dtype=a.dtype, device=a.device)),
          x, low, high, message="out=")


def test_clamp_layouts_in_place_and_out():
    for layout, x in variants((5, 7), torch.float32):
        check(lambda a: a.clone().clamp_(-1, 1), x, message=f"in-place {layout}")
        check(lambda a: torch.clamp(a, -1, 1, out=torch.empty(0, device=a.device)), x,
              message=f"out {layout}")
        check(lambda a: a.clone().relu_(), x, message=f"relu_ {layout}")


def test_isnan_isinf_are_bool():
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
    for dtype in FLOATING:
        check(torch.isnan, x.to(dtype))
        check(torch.isinf, x.to(dtype))
    check(torch.isinf, torch.arange(4))
    check(torch.isnan, torch.arange(4))
    check(lambda a: torch.isnan(a, out=torch.empty(0, dtype=torch.bool, device=a.device)), x)


@pytest.mark.parametrize("op", [torch.isposinf, torch.isneginf], ids=["isposinf", "isneginf"])
def test_isposinf_isneginf(op):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0, -0.0])
    for dtype in FLOATING:
        for layout, tensor in variants((4, 6), dtype):
            compiled_only(lambda: check(op, tensor, message=f"{dtype} {layout}"))
        compiled_only(lambda: check(op, x.to(dtype), message=f"{dtype} special values"))
    for dtype in [torch.int64, torch.int32, torch.uint8, torch.bool]:
        compiled_only(lambda: check(op, make((3, 5), dtype), message=f"{dtype} is never infinite"))
    compiled_only(lambda: check(lambda a: op(a, out=torch.ones(2, dtype=torch.bool, device=a.device)),
                                x, message="out= resizes"))
    check(lambda a: op(a, out=torch.empty(5, device=a.device)), x,
          message="non-bool out= is an error")


def test_bitwise_not_and_abs_wrap():
    extremes = torch.tensor([-128, -1, 0, 127], dtype=torch.int8)
    check(torch.abs, extremes)
    check(torch.neg, extremes)
    check(torch.bitwise_not, extremes)
    check(torch.abs, torch.tensor([0, 200, 255], dtype=torch.uint8))
    check(torch.neg, torch.tensor([0, 200, 255], dtype=torch.uint8))


def test_broadcast_out_and_zero_dim():
    x = make((), torch.float32)
    check(lambda a: torch.sin(a, out=torch.empty(3, device=a.device)), x,
          message="out= of another shape is resized")
    check(torch.exp, make((1, 4), torch.float32).expand(3, 4), message="expanded input")


def test_autograd_through_unary_ops():
    x = make((4, 5), torch.float32, low=0.2, high=2.0).requires_grad_()
    kiln_x = x.detach().to("kiln").requires_grad_()

    # (clamp's backward compares with Scalar overloads of gt/lt, which are not
    # in this family.)
    def loss(t):
        return (torch.exp(t).sin() * torch.log(t) + torch.sqrt(t).tanh() + torch.sigmoid(t)
                + t.abs() + torch.erf(t) + torch.reciprocal(t)).sum()

    loss(x).backward()
    compiled_only(lambda: loss(kiln_x).backward())
    torch.testing.assert_close(kiln_x.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)
