"""Complex64/complex128 pointwise arithmetic (add, sub, mul, div, neg, abs,
sgn, reciprocal), differentially against the CPU."""
import pytest
import torch

from differential import check, compiled_only, make, variants

COMPLEX = [torch.complex64, torch.complex128]
BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=2),
    "sub_complex_alpha": lambda a, b: torch.sub(a, b, alpha=0.5 - 1.5j),
}
UNARY = {"neg": torch.neg, "abs": torch.abs, "sgn": torch.sgn, "reciprocal": torch.reciprocal}


def nonzero(shape, dtype):
    """Values with |z| >= 1, so division and reciprocal never divide by 0
    (the CPU's vectorized and scalar loops disagree on x / 0)."""
    value = make(shape, dtype, low=1.0, high=3.0)
    signs = make(shape, dtype, low=-1.0, high=1.0)
    return value * torch.complex(signs.real.sign(), signs.imag.sign()).to(dtype)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", BINARY)
def test_binary_layouts(name, dtype):
    op = BINARY[name]
    for layout, left in variants((5, 7), dtype):
        right = nonzero(left.shape, dtype)
        compiled_only(lambda: check(op, left, right, message=f"{name} {dtype} {layout}"))
        if name != "div":
            compiled_only(lambda: check(op, right, left, message=f"{name} {dtype} {layout} swapped"))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", UNARY)
def test_unary_layouts(name, dtype):
    op = UNARY[name]
    for layout, x in variants((5, 7), dtype):
        if name == "reciprocal":
            x.add_(2 * x.sgn())  # |z| >= 2, in place so the layout stays
        compiled_only(lambda: check(op, x, message=f"{name} {dtype} {layout}"))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_broadcast_and_zero_dim(dtype):
    x = make((4, 1, 6), dtype)
    y = nonzero((3, 1), dtype)
    for name, op in BINARY.items():
        compiled_only(lambda: check(op, x, y, message=f"{name} broadcast"))
        compiled_only(lambda: check(op, make((), dtype), y, message=f"{name} 0-dim device tensor"))
        compiled_only(lambda: check(op, x, nonzero((), dtype), message=f"{name} 0-dim divisor"))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_mixed_real_and_python_numbers(dtype):
    x = nonzero((4, 6), dtype)
    for real in [torch.float32, torch.float64, torch.float16, torch.int64, torch.bool]:
        r = make((4, 6), real) if real != torch.bool else make((4, 6), real)
        for name in ["add", "sub", "mul"]:
            op = BINARY[name]
            compiled_only(lambda: check(op, x, r, message=f"{name} complex, {real}"))
            compiled_only(lambda: check(op, r, x, message=f"{name} {real}, complex"))
        compiled_only(lambda: check(torch.div, r, x, message=f"div {real} by complex"))
        if real.is_floating_point:
            compiled_only(lambda: check(torch.div, x, make((6,), real, low=1.0, high=3.0),
                                        message=f"div complex by {real}"))
    for number in [2, -1.5, 0.5 + 2j, True]:
        for name in ["add", "sub", "mul", "div"]:
            op = BINARY[name]
            compiled_only(lambda: check(op, x, number, message=f"{name} python {number!r}"))
        compiled_only(lambda: check(lambda a: number / a, x, message=f"python {number!r} / tensor"))
    compiled_only(lambda: check(torch.mul, x, torch.tensor(1 - 1j), message="0-dim CPU tensor"))
    # A real tensor times a Python complex: the result is complex.
    compiled_only(lambda: check(torch.mul, make((4, 6), torch.float32), 1j, message="real * 1j"))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_in_place_and_out(dtype):
    x = make((3, 5), dtype)
    y = nonzero((5,), dtype)
    for name in ["add", "sub", "mul", "div"]:
        compiled_only(lambda: check(lambda a, b: getattr(a.clone(), name + "_")(b), x, y,
                                    message=f"{name}_"))
        compiled_only(lambda: check(lambda a, b: getattr(torch, name)(a, b, out=torch.empty_like(a)),
                                    x, y, message=f"{name} out="))
        # A real tensor cannot hold a complex result.
        check(lambda a, b: getattr(a.real.clone(), name + "_")(b), x, y, message=f"{name}_ real self")
    # A wider out= tensor: computed in the common dtype, then cast.
    check(lambda a, b: torch.mul(a, b, out=torch.empty(0, dtype=torch.complex128, device=a.device)),
          x.to(torch.complex64), y.to(torch.complex64), message="mul out=complex128")
    for name in ["neg", "sgn"]:
        compiled_only(lambda: check(lambda a: getattr(a.clone(), name + "_")(), x, message=f"{name}_"))
    compiled_only(lambda: check(lambda a: a.reciprocal(), y, message="reciprocal"))
    check(lambda a: torch.abs(a, out=torch.empty(0, device=a.device, dtype=a.real.dtype)), x,
          message="abs out= real")
    check(lambda a: torch.abs(a, out=torch.empty(0, device=a.device, dtype=a.dtype)), x,
          message="abs out= complex")
    check(lambda a: a.clone().abs_(), x, message="abs_ refuses complex")


@pytest.mark.parametrize("dtype", COMPLEX)
def test_conjugated_inputs_and_special_values(dtype):
    x = make((4, 5), dtype)
    y = nonzero((4, 5), dtype)
    compiled_only(lambda: check(lambda a, b: a.conj() * b, x, y, message="conj view"))
    compiled_only(lambda: check(lambda a, b: a / b.conj(), x, y, message="conj divisor"))
    special = torch.tensor([0, 1e30 + 1e30j, -1e-30 + 1e-30j, float("inf"), complex(0, -2)], dtype=dtype)
    # abs and sgn of huge or tiny values must not overflow or flush to zero.
    compiled_only(lambda: check(torch.abs, special, message="abs special"))
    compiled_only(lambda: check(torch.sgn, special[:3], message="sgn special, 0 -> 0"))
    wide = torch.tensor([1e30 + 1e30j, 3 - 4j], dtype=dtype)
    compiled_only(lambda: check(torch.div, wide, wide.flip(0), message="div without overflow"))


def test_fft_backward_runs_on_device():
    """irfft's backward multiplies complex gradients: no op leaves the device."""
    x = make((8,), torch.complex64)

    def irfft_gradient(signal):
        leaf = signal.clone().requires_grad_(True)
        torch.fft.irfft(leaf).sum().backward()
        return leaf.grad

    compiled_only(lambda: check(irfft_gradient, x, message="irfft backward"))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_matmul_of_conjugated_views(dtype):
    """The library matmul keeps lazy conjugate bits (linalg.eig's backward
    multiplies by V.mH): a dropped bit gives silently wrong values."""
    v = make((3, 3), dtype)
    check(lambda a: a.mH @ a, v, message="mH @ v")
    check(lambda a: a @ a.conj(), v, message="v @ conj")
    check(lambda a: torch.bmm(a.mH[None], a[None]), v, message="bmm")
    check(lambda a: torch.addmm(a, a.conj(), a), v, message="addmm")
    check(lambda a: torch.baddbmm(a[None], a.mH[None], a[None]), v, message="baddbmm")
    check(lambda a: (-a.conj()).resolve_conj() @ a.conj(), v, message="neg of conj")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_polar(dtype):
    for layout, magnitude in variants((5, 7), dtype, low=0.0, high=3.0):
        angle = make(magnitude.shape, dtype, low=-4.0, high=4.0)
        compiled_only(lambda: check(torch.polar, magnitude, angle, message=f"polar {dtype} {layout}"))
    magnitude = make((4, 1), dtype, low=0.0, high=3.0)
    angle = make((5,), dtype, low=-4.0, high=4.0)
    compiled_only(lambda: check(torch.polar, magnitude, angle, message="broadcast"))
    compiled_only(lambda: check(
        lambda a, b: torch.polar(a, b, out=torch.empty(0, device=a.device, dtype=torch.polar(a[:0], b[:0]).dtype)),
        magnitude, angle, message="out="))


def test_polar_errors_and_backward():
    x = make((4,), torch.float32, low=0.5, high=2.0)
    check(torch.polar, x, x.double(), message="mixed dtypes")
    check(torch.polar, x.long(), x.long(), message="integer inputs")
    check(lambda a, b: torch.polar(a, b, out=torch.empty(4, device=a.device, dtype=torch.complex128)),
          x, x, message="wrong out dtype")

    def gradients(magnitude, angle):
        magnitude = magnitude.clone().requires_grad_(True)
        angle = angle.clone().requires_grad_(True)
        torch.polar(magnitude, angle).abs().pow(2).sum().backward()
        (torch.polar(magnitude, angle) * (1 - 2j)).real.sum().backward()
        return magnitude.grad, angle.grad

    compiled_only(lambda: check(gradients, x, make((4,), torch.float32), message="polar backward"))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_square_and_inverse_power(dtype):
    for layout, x in variants((5, 7), dtype):
        compiled_only(lambda: check(torch.square, x, message=f"square {layout}"))
        compiled_only(lambda: check(lambda a: a ** (2 + 0j), x, message=f"pow 2+0j {layout}"))
        x.add_(2 * x.sgn())  # |z| >= 2: no division by 0
        compiled_only(lambda: check(lambda a: torch.pow(a, -1), x, message=f"pow -1 {layout}"))
    x = make((3, 4), dtype)
    compiled_only(lambda: check(lambda a: a.clone().pow_(2), x, message="pow_ 2"))
    compiled_only(lambda: check(lambda a: torch.pow(a, 2, out=torch.empty_like(a)), x, message="pow out="))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_equality(dtype):
    for layout, x in variants((5, 7), dtype):
        delta = torch.zeros(x.numel(), dtype=dtype)
        delta[::3] = 1j  # imaginary parts differ here
        delta[1::3] = 1  # real parts differ here
        y = x + delta.reshape(x.shape)
        for op in [torch.eq, torch.ne]:
            compiled_only(lambda: check(op, x, y, message=f"{op.__name__} {layout}"))
            compiled_only(lambda: check(op, x, x, message=f"{op.__name__} {layout} same"))
    x = torch.tensor([1 + 2j, 1 - 2j, 2j, 1], dtype=dtype)
    for op in [torch.eq, torch.ne]:
        compiled_only(lambda: check(op, x, 1 + 2j, message="python complex"))
        compiled_only(lambda: check(op, x, 1, message="python int"))
        compiled_only(lambda: check(op, x, torch.tensor([1.0, 2.0, 0.0, 1.0]), message="real tensor"))
        compiled_only(lambda: check(op, x, x.conj(), message="conj view"))
        check(lambda a, b: op(a, b, out=torch.empty(0, device=a.device)), x, x.conj(), message="out=float")


def test_copy_of_a_conjugated_view_under_a_python_dispatch_mode():
    # AOTAutograd runs a compiled graph's first call under a dispatch mode;
    # the copy then reached Kiln's _copy_from with the conj bit still set.
    from torch.utils._python_dispatch import TorchDispatchMode

    class Passthrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    values = torch.randn(5, 3, 6, dtype=torch.complex64).transpose(1, 2)
    on_kiln = values.to("kiln")
    with Passthrough():
        cloned, negated = on_kiln.conj().clone(), torch._neg_view(on_kiln).clone()
    torch.testing.assert_close(cloned.cpu(), values.conj().resolve_conj())
    torch.testing.assert_close(negated.cpu(), -values)


def test_compiled_clone_of_a_conjugate_is_resolved_on_the_first_call():
    def conjugated(values):
        return torch.ops.aten._conj(values).clone() * 2

    values = torch.randn(5, 3, 6, dtype=torch.complex64).transpose(1, 2)
    compiled = torch.compile(conjugated, backend="kiln", dynamic=False)
    for _ in range(2):
        torch.testing.assert_close(compiled(values.to("kiln")).cpu(), conjugated(values))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_compiled_complex_arithmetic_with_python_numbers(dtype):
    # Complex ops are extern calls; a Python number where mul's schema takes
    # a tensor is passed as a wrapped number, as ATen's argument parser does.
    def arithmetic(values):
        return (values * 2 + 1j) / 3 - 1.5

    values = torch.randn(4, 3, dtype=dtype)
    compiled = torch.compile(arithmetic, backend="kiln", dynamic=False)
    result = compiled(values.to("kiln"))
    assert result.dtype == dtype
    torch.testing.assert_close(result.cpu(), arithmetic(values))
