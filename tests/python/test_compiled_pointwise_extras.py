"""The pointwise extras (fmax, logaddexp, xlogy, nextafter, logit, frexp, the
shrinks, glu, prelu, cross, renorm, equal, ...) differentially against the
CPU: every dtype the CPU supports (and its errors for the others), layouts,
broadcasting, python scalars, in-place and out= forms, and backward."""
import math

import pytest
import torch
import torch.nn.functional as F

from differential import ALL, FLOATING, check, compiled_only, variants
from differential import make as make_tensor

aten = torch.ops.aten
NAN, INF = float("nan"), float("inf")


def make(shape, dtype=torch.float32, **arguments):
    return make_tensor(shape, dtype, **arguments)


SPECIAL = [NAN, -NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.0, 1e-30, 65504.0, 1e-7]

# name -> (fn(a, b), in-place fn or None)
BINARY = {
    "fmax": (torch.fmax, None),
    "fmin": (torch.fmin, None),
    "heaviside": (torch.heaviside, lambda a, b: a.heaviside_(b)),
    "logaddexp": (torch.logaddexp, None),
    "logaddexp2": (torch.logaddexp2, None),
    "xlogy": (torch.xlogy, lambda a, b: a.xlogy_(b)),
    "xlog1py": (torch.special.xlog1py, None),
    "nextafter": (torch.nextafter, lambda a, b: a.nextafter_(b)),
    "rsub": (lambda a, b: torch.rsub(a, b, alpha=2), None),
}

# name -> (fn(x), in-place fn or None)
UNARY = {
    "sinc": (torch.sinc, torch.sinc_),
    "entr": (torch.special.entr, None),
    "signbit": (torch.signbit, None),
    "angle": (torch.angle, None),
    "logit": (torch.logit, lambda x: x.logit_()),
    "logit_eps": (lambda x: torch.logit(x, 0.2), lambda x: x.logit_(0.2)),
    "hardshrink": (lambda x: F.hardshrink(x, 0.7), None),
    "softshrink": (lambda x: F.softshrink(x, 0.7), None),
    "frexp": (torch.frexp, None),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_over_dtypes(name):
    forward, _ = BINARY[name]
    for dtype in ALL:
        a = make((33,), dtype, low=-4, high=4)
        b = make((33,), dtype, low=-4, high=4)
        compiled_only(lambda: check(forward, a, b, message=f"{name} {dtype}"))


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_layouts_broadcast_scalars_in_place(name):
    forward, in_place = BINARY[name]
    other = make((5, 7), torch.float32, low=0.1, high=3)
    for layout, x in variants((5, 7), torch.float32, low=-3, high=3):
        check(forward, x, other[: x.shape[0]] if x.dim() else other, message=f"{name} {layout}")
        if in_place is not None and x.dim():
            check(lambda a, b: in_place(a.clone(), b), x, other[: x.shape[0]], message=f"{name} in-place")
    x = make((4, 1, 3), torch.float32, low=-3, high=3)
    check(forward, x, make((5, 1), torch.float32, low=0.1, high=3), message=f"{name} broadcast")
    check(forward, x, torch.tensor(1.5), message=f"{name} cpu scalar")
    check(forward, x.half(), make((4, 5, 3), torch.float32), message=f"{name} mixed dtypes")


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_special_values(name):
    forward, _ = BINARY[name]
    values = torch.tensor(SPECIAL)
    a, b = values.repeat_interleave(len(SPECIAL)), values.repeat(len(SPECIAL))
    for dtype in FLOATING:
        compiled_only(lambda: check(forward, a.to(dtype), b.to(dtype), message=f"{name} {dtype}"))


def test_binary_out_forms():
    a = make((4, 6), torch.float32, low=-3, high=3)
    b = make((4, 6), torch.float32, low=0.1, high=3)
    for op in [torch.fmax, torch.fmin, torch.heaviside, torch.logaddexp, torch.logaddexp2,
               torch.xlogy, torch.special.xlog1py, torch.nextafter]:
        check(lambda x, y: op(x, y, out=torch.empty(0, device=x.device)), a, b, message=str(op))
        # A wider out= tensor gets the rounded half-precision result.
        check(lambda x, y: op(x, y, out=torch.empty(0, device=x.device)), a.half(), b.half(),
              message=f"{op} half")
    check(lambda x: torch.xlogy(2.0, x), b, message="xlogy scalar self")
    check(lambda x: torch.special.xlog1py(x, 3.0), a, message="xlog1py scalar other")


def test_nextafter_steps_exactly():
    # Bit-exact neighbours, including subnormals, the largest finite values
    # and the infinities, in every floating dtype.
    for dtype in FLOATING:
        info = torch.finfo(dtype)
        values = torch.tensor([0.0, -0.0, info.tiny, info.smallest_normal / 4, info.max, -info.max,
                               INF, -INF, 1.0, -1.0, NAN, 3.0], dtype=torch.float64).to(dtype)
        for target in [INF, -INF, 0.0, NAN, 1.0]:
            cpu = torch.nextafter(values, torch.full_like(values, target))
            kiln = torch.nextafter(values.to("kiln"), torch.full_like(values, target).to("kiln")).cpu()
            assert torch.equal(cpu.isnan(), kiln.isnan()), (dtype, target)
            same = cpu.isnan() | (cpu.view(-1) == kiln.view(-1))
            assert same.all(), (dtype, target, cpu, kiln)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_over_dtypes_and_special_values(name):
    forward, _ = UNARY[name]
    for dtype in ALL:
        x = make((33,), dtype, low=-2, high=2)
        compiled_only(lambda: check(forward, x, message=f"{name} {dtype}"))
    for dtype in FLOATING:
        x = torch.tensor(SPECIAL + [0.2, 0.8, 0.7, -0.7, 0.1, 0.9]).to(dtype)
        compiled_only(lambda: check(forward, x, message=f"{name} special {dtype}"))


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_layouts_and_in_place(name):
    forward, in_place = UNARY[name]
    for layout, x in variants((5, 7), torch.float32, low=-2, high=2):
        check(forward, x, message=f"{name} {layout}")
        if in_place is not None:
            check(lambda a: in_place(a.clone()), x, message=f"{name} in-place {layout}")


def test_unary_out_forms_and_errors():
    x = make((4, 6), torch.float32, low=-2, high=2)
    for op in [torch.sinc, torch.special.entr, torch.signbit, torch.angle, torch.logit]:
        check(lambda a: op(a, out=torch.empty(0, device=a.device, dtype=op(a[:1]).dtype)), x,
              message=str(op))
    check(lambda a: torch.frexp(a, out=(torch.empty(0, device=a.device),
                                        torch.empty(0, device=a.device, dtype=torch.int32))),
          x, message="frexp out")
    check(lambda a: F.softshrink(a, -1.0), x, message="softshrink negative lambda")
    check(lambda a: torch.frexp(a, out=(torch.empty(0, device=a.device),
                                        torch.empty(0, device=a.device))), x,
          message="frexp int exponent required")


BACKWARD = {
    "logit_backward": lambda g, x: aten.logit_backward(g, x),
    "logit_backward_eps": lambda g, x: aten.logit_backward(g, x, 0.25),
    "hardshrink_backward": lambda g, x: aten.hardshrink_backward(g, x, 0.5),
    "softshrink_backward": lambda g, x: aten.softshrink_backward(g, x, 0.5),
}


@pytest.mark.parametrize("name", list(BACKWARD))
def test_backward_kernels(name):
    op = BACKWARD[name]
    for dtype in FLOATING:
        x = make((40,), dtype, low=-0.5, high=1.5)
        x[:4] = torch.tensor([0.0, 1.0, 0.25, 0.75], dtype=dtype)
        g = make((40,), dtype)
        compiled_only(lambda: check(op, g, x, message=f"{name} {dtype}"))
    x = make((5, 7), torch.float32, low=-0.5, high=1.5)
    check(op, make((7, 5), torch.float32).t(), x, message=f"{name} strided")
    check(op, make((0, 3), torch.float32), make((0, 3), torch.float32), message=f"{name} empty")


def _gradients(fn, *inputs):
    """fn's input gradients on the CPU and kiln, compared."""
    def run(device):
        leaves = [value.detach().to(device).requires_grad_() for value in inputs]
        result = fn(*leaves)
        result.backward(torch.ones_like(result))
        return [leaf.grad for leaf in leaves]
    expected = run("cpu")
    actual = compiled_only(lambda: run("kiln"))
    for first, second in zip(expected, actual):
        torch.testing.assert_close(second.cpu(), first, rtol=1e-4, atol=1e-5, equal_nan=True)


def test_autograd_through_the_extras():
    x = make((6, 8), torch.float32, low=0.05, high=0.95)
    y = make((6, 8), torch.float32, low=0.1, high=3)
    _gradients(lambda a: torch.logit(a), x)
    _gradients(lambda a: torch.logit(a, 0.2), x)
    _gradients(lambda a: F.hardshrink(a * 4 - 2, 0.5), x)
    _gradients(lambda a: F.softshrink(a * 4 - 2, 0.5), x)
    _gradients(lambda a: F.glu(a, 1), x)
    _gradients(lambda a: F.glu(a, 0), x)
    _gradients(lambda a, b: torch.xlogy(a, b), x, y)
    _gradients(lambda a, b: torch.logaddexp(a, b), x, y)
    _gradients(lambda a, b: F.kl_div(a.log(), b, reduction="batchmean"), x, y)
    _gradients(lambda a, w: F.prelu(a * 4 - 2, w), x.reshape(2, 3, 8), torch.tensor([0.1, 0.2, 0.3]))
    _gradients(lambda a, b: torch.linalg.cross(a, b, dim=0), x[:3], y[:3])


def test_glu_and_prelu():
    for dtype in FLOATING + [torch.int64]:
        x = make((4, 6, 5), dtype)
        compiled_only(lambda: check(F.glu, x, 1, message=f"glu {dtype}"))
        check(F.glu, x, -1, message=f"glu odd {dtype}")
        check(lambda a: aten.glu_backward(torch.ones_like(a[:, :3]), a, 1), x, message=f"glu_backward {dtype}")
        weight = make((6,), dtype)
        compiled_only(lambda: check(F.prelu, x, weight, message=f"prelu {dtype}"))
        check(F.prelu, x, weight[:1], message=f"prelu single weight {dtype}")
    x = make((6, 4), torch.float32).t()
    check(F.glu, x, 0, message="glu strided")
    check(F.glu, make((0, 4), torch.float32), 1, message="glu empty")
    check(lambda a: torch.glu(a, 0, out=torch.empty(0, device=a.device)), make((4, 3)), message="glu out")
    check(F.glu, torch.tensor(1.0), message="glu 0-dim")
    check(lambda a, w: aten._prelu_kernel_backward(torch.ones_like(a), a, w), make((3, 4)),
          make((1, 4)), message="prelu backward broadcast")


def test_cross():
    for dtype in FLOATING + [torch.int64, torch.bool]:
        a, b = make((4, 3), dtype), make((4, 3), dtype)
        compiled_only(lambda: check(torch.linalg.cross, a, b, message=f"cross {dtype}"))
    check(lambda a, b: torch.cross(a, b, dim=0), make((3, 5)), make((3, 5)), message="cross dim 0")
    check(torch.linalg.cross, make((2, 1, 3)), make((4, 3)).unsqueeze(0), message="cross broadcast")
    check(torch.linalg.cross, make((5, 3)).t().t(), make((3, 5)).t(), message="cross strided")
    check(torch.linalg.cross, make((0, 3)), make((1, 3)), message="cross empty")
    check(lambda a, b: torch.linalg.cross(a, b, out=torch.empty(0, device=a.device)), make((2, 3)),
          make((2, 3)), message="cross out")
    check(torch.linalg.cross, make((2, 4)), make((2, 4)), message="cross needs 3")
    check(torch.linalg.cross, make((2, 3)), make((2, 3), torch.float64), message="cross dtypes")


def test_renorm():
    for dtype in FLOATING + [torch.int64]:
        x = make((4, 5, 3), dtype)
        compiled_only(lambda: check(torch.renorm, x, 2, 1, 1.5, message=f"renorm {dtype}"))
    x = make((4, 5), torch.float32)
    for p, dim, maxnorm in [(1, 0, 2.0), (3.5, -1, 0.5), (INF, 1, 1.0), (2, 0, 100.0)]:
        check(torch.renorm, x, p, dim, maxnorm, message=f"renorm {p} {dim} {maxnorm}")
    check(lambda a: a.clone().renorm_(2, 0, 1.0), x, message="renorm_")
    check(lambda a: torch.renorm(a, 2, 0, 1.0, out=torch.empty(0, device=a.device)), x, message="out")
    check(torch.renorm, x.t(), 2, 0, 1.0, message="renorm strided")
    check(torch.renorm, make((0, 4)), 2, 1, 1.0, message="renorm empty")
    for p, maxnorm, shape in [(0, 1.0, (2, 2)), (2, -1.0, (2, 2)), (2, 1.0, (3,))]:
        check(torch.renorm, make(shape), p, 0, maxnorm, message=f"renorm error {p} {maxnorm}")


def test_equal():
    for dtype in ALL:
        a = make((5, 4), dtype)
        b = a.clone()
        compiled_only(lambda: check(torch.equal, a, b, message=f"equal {dtype}"))
        if a.numel():
            b[2, 1] = 1 - b[2, 1] if dtype != torch.bool else not b[2, 1]
        check(torch.equal, a, b, message=f"unequal {dtype}")
    nan = torch.tensor([1.0, NAN])
    check(torch.equal, nan, nan, message="nan")
    check(torch.equal, make((2, 3)), make((3, 2)), message="shapes")
    check(torch.equal, make((0,)), make((0,)), message="empty")
    check(torch.equal, torch.ones(3), torch.ones(3, dtype=torch.int64), message="promoted")
    x = make((4, 4))
    check(lambda a: torch.equal(a.t(), a.t().contiguous()), x, message="strided")


def test_kl_div_is_native():
    log_input = make((6, 5)).log_softmax(-1)
    target = make((6, 5), low=0, high=1)
    target[0, :2] = 0
    for reduction in ["batchmean", "sum", "none"]:
        compiled_only(lambda: check(F.kl_div, log_input, target, reduction=reduction,
                                    message=f"kl_div {reduction}"))
    compiled_only(lambda: check(F.kl_div, log_input, target.log(), log_target=True, reduction="sum",
                                message="log"))


def test_angle_of_integers_is_float():
    check(torch.angle, torch.tensor([-3, 0, 4]), message="angle int")
    check(torch.angle, torch.tensor([True, False]), message="angle bool")
    assert math.isclose(torch.angle(torch.tensor(-2.0, device="kiln")).item(), math.pi, rel_tol=1e-6)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("op", [torch.complex, torch.polar])
def test_complex_and_polar(op):
    for dtype in [torch.float32, torch.float64, torch.float16]:
        a, b = make((4, 5), dtype, low=0, high=3), make((4, 5), dtype)
        compiled_only(lambda: check(op, a, b, message=f"{op.__name__} {dtype}"))
    check(op, make((5, 4)).t(), make((4, 1)), message="strided and broadcast")
    check(op, make((0, 3)), make((1, 3)), message="empty")
    check(op, make(()), make(()), message="0-dim")
    check(lambda a, b: op(a, b, out=torch.empty(0, dtype=torch.complex64, device=a.device)),
          make((3,)), make((3,)), message="out")
    # The CPU's errors: other dtypes, mixed dtypes, a wrong out= dtype.
    check(op, make((3,), torch.bfloat16), make((3,), torch.bfloat16), message="bfloat16")
    check(op, make((3,), torch.int64), make((3,), torch.int64), message="int64")
    check(op, make((3,)), make((3,), torch.float64), message="mixed")
    check(lambda a, b: op(a, b, out=torch.empty(0, device=a.device)), make((3,)), make((3,)),
          message="real out")
