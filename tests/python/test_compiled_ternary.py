"""Compiled where, lerp, addcmul, addcdiv, masked_fill and pow with a Scalar
operand, differentially against the CPU."""
import pytest
import torch

from differential import ALL, FLOATING, INTEGRAL, check, compiled_only, make, variants


@pytest.mark.parametrize("dtype", ALL)
def test_where_layouts(dtype):
    for layout, x in variants((5, 7), dtype):
        condition = make(x.shape, torch.bool)
        other = make(x.shape, dtype)
        compiled_only(lambda: check(torch.where, condition, x, other, message=f"{dtype} {layout}"))


def test_where_promotion_broadcast_and_scalars():
    condition = make((4, 1, 6), torch.bool)
    check(torch.where, condition, make((3, 1), torch.float16), make((6,), torch.int32),
          message="broadcast and promotion")
    check(torch.where, condition, make((6,), torch.int64), make((6,), torch.float32))
    check(torch.where, condition, make((6,), torch.bfloat16), 2.5, message="Python float")
    check(torch.where, condition, 1, make((6,), torch.int32), message="Python int")
    compiled_only(lambda: check(torch.where, condition, 1.0, 0.0, message="two Python numbers"))
    check(torch.where, condition, make((6,), torch.float16), 1e10, message="overflows to inf")
    check(torch.where, torch.tensor(True), make((3,), torch.float32), make((3,), torch.float32),
          message="0-dim CPU condition with device tensors")
    check(lambda c, a, b: torch.where(c, a, b, out=torch.empty(0, device=a.device)),
          condition, make((6,), torch.float32), make((6,), torch.float32), message="out=")
    check(lambda c, a, b: torch.where(c, a, b, out=torch.empty(0, dtype=torch.float64, device=a.device)),
          condition, make((6,), torch.float32), make((6,), torch.float32), message="out= dtype raises")
    check(torch.where, make((6,), torch.int64), make((6,), torch.float32), 0.0,
          message="integer condition raises")


def test_where_uint8_condition():
    condition = torch.tensor([0, 1, 2, 0], dtype=torch.uint8)
    with pytest.warns(UserWarning):
        result = torch.where(condition.to("kiln"), torch.ones(4).to("kiln"), torch.zeros(4).to("kiln"))
    torch.testing.assert_close(result.cpu(), torch.tensor([0.0, 1.0, 1.0, 0.0]))


def test_where_backward():
    x = make((5,), torch.float32).requires_grad_()
    kiln_x = x.detach().to("kiln").requires_grad_()
    condition = make((5,), torch.bool)
    torch.where(condition, x * 2, 0.0).sum().backward()
    compiled_only(lambda: torch.where(condition.to("kiln"), kiln_x * 2, 0.0).sum().backward())
    torch.testing.assert_close(kiln_x.grad.cpu(), x.grad)


@pytest.mark.parametrize("dtype", FLOATING + INTEGRAL)
def test_lerp(dtype):
    start = make((6, 5), dtype)
    end = make((6, 5), dtype)
    for weight in [0.0, 0.25, 0.5, 0.75, 1.0, -0.5, 2.0]:
        compiled_only(lambda: check(torch.lerp, start, end, weight, message=f"{dtype} {weight}"))
    weights = make((5,), dtype, low=-0.5, high=1.5)
    check(torch.lerp, start, end, weights, message="tensor weight")
    check(torch.lerp, start, end, make((), dtype), message="0-dim weight")


def test_lerp_forms():
    for layout, start in variants((4, 6), torch.float32):
        end = make(start.shape, torch.float32)
        check(lambda a, b: a.clone().lerp_(b, 0.3), start, end, message=f"in-place {layout}")
        check(lambda a, b: torch.lerp(a, b, 0.7, out=torch.empty(0, device=a.device)), start, end,
              message=f"out {layout}")
        check(lambda a, b: a.clone().lerp_(b, b), start, end, message=f"tensor in-place {layout}")
    check(torch.lerp, make((3,), torch.float32), make((3,), torch.float64), 0.5,
          message="dtype mismatch raises")
    check(torch.lerp, make((4, 1), torch.float16), make((3,), torch.float16), 0.4,
          message="broadcast")


@pytest.mark.parametrize("dtype", FLOATING + INTEGRAL + [torch.int8, torch.bool])
def test_addcmul_addcdiv(dtype):
    self = make((5, 6), dtype)
    first = make((5, 6), dtype)
    second = make((6,), dtype, low=0.5, high=3.0)
    for value in [1, 2, 0.5, -1.5]:
        compiled_only(lambda: check(torch.addcmul, self, first, second, value=value,
                                    message=f"addcmul {dtype} {value}"))
        compiled_only(lambda: check(torch.addcdiv, self, first, second, value=value,
                                    message=f"addcdiv {dtype} {value}"))


def test_addcmul_addcdiv_forms():
    for layout, self in variants((4, 6), torch.float32):
        first = make(self.shape, torch.float32)
        second = make(self.shape, torch.float32, low=0.5, high=2.0)
        check(lambda a, b, c: a.clone().addcmul_(b, c, value=0.5), self, first, second,
              message=f"addcmul_ {layout}")
        check(lambda a, b, c: a.clone().addcdiv_(b, c, value=-2), self, first, second,
              message=f"addcdiv_ {layout}")
        check(lambda a, b, c: torch.addcmul(a, b, c, out=torch.empty(0, device=a.device)), self,
              first, second, message=f"addcmul out {layout}")
        check(lambda a, b, c: torch.addcdiv(a, b, c, out=torch.empty(0, device=a.device)), self,
              first, second, message=f"addcdiv out {layout}")
    check(torch.addcmul, make((3,), torch.float16), make((3,), torch.float32),
          make((3,), torch.int32), message="promotion")


@pytest.mark.parametrize("dtype", ALL + [torch.uint8, torch.int8])
def test_masked_fill(dtype):
    for layout, x in variants((5, 7), dtype):
        mask = make(x.shape, torch.bool)
        compiled_only(lambda: check(lambda a, m: a.masked_fill(m, 1), x, mask,
                                    message=f"{dtype} {layout}"))
        check(lambda a, m: a.clone().masked_fill_(m, 0), x, mask, message=f"in-place {layout}")
        check(lambda a, m: a.masked_fill(m, torch.tensor(1)), x, mask, message="CPU value tensor")
        check(lambda a, m, v: a.masked_fill(m, v), x, mask, torch.tensor(1).to(dtype),
              message="device value tensor")


def test_masked_fill_checks_and_broadcast():
    x = make((4, 5), torch.float32)
    check(lambda a, m: a.masked_fill(m, 2.5), x, make((5,), torch.bool), message="mask broadcasts")
    check(lambda a, m: a.masked_fill(m, 2.5), make((5,), torch.float32), make((4, 5), torch.bool),
          message="self broadcasts")
    check(lambda a, m: a.clone().masked_fill_(m, 2.5), make((5,), torch.float32),
          make((4, 5), torch.bool), message="in-place self cannot broadcast")
    check(lambda a, m: a.masked_fill(m, 2.5), x, make((4, 5), torch.int64), message="int mask raises")
    check(lambda a, m: a.masked_fill(m, 300), make((3,), torch.int8), make((3,), torch.bool),
          message="overflow raises")
    check(lambda a, m: a.masked_fill(m, torch.ones(2)), x, make((4, 5), torch.bool),
          message="non-0-dim value raises")
    check(lambda a, m: a.masked_fill(m, float("-inf")), make((4, 5), torch.float16),
          make((4, 5), torch.bool), message="-inf (attention masks)")


POW_EXPONENTS = [0, 1, 2, 3, -1, -2, 0.5, -0.5, 2.5, -1.5, 2.001, True, False]


@pytest.mark.parametrize("dtype", FLOATING)
def test_pow_tensor_scalar_floating(dtype):
    x = make((20,), dtype, low=0.1, high=3.0)
    for exponent in POW_EXPONENTS:
        compiled_only(lambda: check(torch.pow, x, exponent, message=f"{dtype} {exponent}"))
    signed = torch.tensor([-2.0, -0.0, 0.0, float("inf"), float("-inf"), float("nan"), -1.5, 3.0])
    for exponent in POW_EXPONENTS:
        check(torch.pow, signed.to(dtype), exponent, message=f"{dtype} special {exponent}")


@pytest.mark.parametrize("dtype", INTEGRAL + [torch.int8, torch.uint8, torch.bool])
def test_pow_tensor_scalar_integral(dtype):
    x = make((20,), dtype, low=-4, high=5)
    for exponent in [0, 1, 2, 3, 5, -1, 0.5, 2.5, True]:
        check(torch.pow, x, exponent, message=f"{dtype} {exponent}")
    check(torch.square, x, message="square")


def test_pow_forms():
    for layout, x in variants((4, 6), torch.float32, low=0.1, high=2.0):
        check(lambda a: a.clone().pow_(3), x, message=f"pow_ {layout}")
        check(lambda a: a.clone().pow_(1.7), x, message=f"pow_ generic {layout}")
        check(lambda a: torch.pow(a, 2, out=torch.empty(0, device=a.device)), x,
              message=f"out {layout}")
    check(lambda a: a.clone().pow_(0.5), make((3,), torch.int64), message="integer in-place to float raises")


@pytest.mark.parametrize("dtype", FLOATING + INTEGRAL)
def test_pow_scalar_base(dtype):
    exponent = make((12,), dtype, low=0, high=4)
    for base in [2, 2.5, 1, -2, 0.5]:
        compiled_only(lambda: check(torch.pow, base, exponent, message=f"{base} ** {dtype}"))
    check(lambda e: torch.pow(3, e, out=torch.empty(0, dtype=e.dtype, device=e.device)), exponent,
          message="out=")


def test_pow_backward():
    x = make((6,), torch.float32, low=0.5, high=2.0).requires_grad_()
    kiln_x = x.detach().to("kiln").requires_grad_()
    (x ** 3 + 2 ** x + x.pow(0.5)).sum().backward()
    compiled_only(lambda: (kiln_x ** 3 + 2 ** kiln_x + kiln_x.pow(0.5)).sum().backward())
    torch.testing.assert_close(kiln_x.grad.cpu(), x.grad)
