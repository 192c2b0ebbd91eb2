"""Compiled shape ops that move data (cat, stack, flip, roll), differentially
against the CPU, and the copies that clone/contiguous/copy_ make."""
import pytest
import torch

import torch_kiln
from differential import ALL, check, compiled_only, make, variants


@pytest.mark.parametrize("dtype", ALL)
def test_cat(dtype):
    for name, x in variants((3, 5), dtype):
        if x.dim() == 0:
            check(lambda a: torch.cat([a, a]), x, message="0-dim tensors cannot be concatenated")
            continue
        for dim in range(-x.dim(), x.dim()):
            y = make(tuple(s if d != dim % x.dim() else 2 for d, s in enumerate(x.shape)), dtype)
            compiled_only(lambda: check(torch.cat, [x, y, x], dim, message=f"{name} dim {dim}"))


def test_cat_promotes_mixed_dtypes():
    pairs = [(torch.float32, torch.int64), (torch.float16, torch.bfloat16), (torch.bool, torch.int32),
             (torch.int32, torch.float64), (torch.uint8, torch.int8)]
    for first, second in pairs:
        a, b = make((2, 3), first), make((4, 3), second)
        compiled_only(lambda: check(torch.cat, [a, b], message=f"{first} {second}"))


def test_cat_skips_legacy_empty_tensors_and_checks_shapes():
    x = make((2, 3), torch.float32)
    compiled_only(lambda: check(torch.cat, [x, torch.ones(0), x], 1))
    compiled_only(lambda: check(torch.cat, [torch.ones(0), torch.ones(0)]))
    compiled_only(lambda: check(torch.cat, [x, torch.ones(0, 3)], 0))
    check(torch.cat, [x, torch.ones(0, 3)], 1, message="an empty 2-D tensor still needs matching sizes")
    check(torch.cat, [x, torch.ones(3, 3)], 1, message="size mismatch")
    check(torch.cat, [x, torch.ones(3)], 0, message="rank mismatch")
    check(torch.cat, [x], 2, message="dim out of range")
    check(lambda: torch.cat([]), message="empty list")


def test_cat_out_and_memory_format():
    x, y = make((2, 3), torch.float32), make((2, 4), torch.float32)

    def into(dtype, shape=(0,)):
        return lambda a, b: torch.cat([a, b], 1, out=torch.empty(shape, dtype=dtype, device=a.device))

    compiled_only(lambda: check(into(torch.float32), x, y))
    compiled_only(lambda: check(into(torch.float64, (2, 7)), x, y))
    check(into(torch.int64), x, y, message="float can't be cast to an int out")
    nhwc = make((2, 3, 4, 5), torch.float32).contiguous(memory_format=torch.channels_last)
    result = compiled_only(lambda: torch.cat([nhwc.to("kiln"), nhwc.to("kiln")], 1))
    assert result.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(result.cpu(), torch.cat([nhwc, nhwc], 1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_stack(dtype):
    for name, x in variants((3, 4), dtype):
        for dim in range(-x.dim() - 1, x.dim() + 1):
            compiled_only(lambda: check(torch.stack, [x, x, x], dim, message=f"{name} {dim}"))


@pytest.mark.parametrize("dtype", ALL)
def test_flip(dtype):
    for name, x in variants((3, 4, 5), dtype):
        dims_list = [(0,), (-1,), (0, 2), (0, 1, 2), ()] if x.dim() == 3 else [(0,), ()]
        for dims in dims_list:
            compiled_only(lambda: check(torch.flip, x, dims, message=f"{name} {dims}"))
    check(torch.flip, make((2, 3), torch.float32), (0, 0), message="repeated dims")
    check(torch.flip, make((2, 3), torch.float32), (2,), message="dim out of range")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_roll(dtype):
    for name, x in variants((4, 5), dtype):
        compiled_only(lambda: check(torch.roll, x, 3, message=f"{name} flat"))
        compiled_only(lambda: check(torch.roll, x, -7, message=f"{name} flat negative"))
        if x.dim() == 2:
            compiled_only(lambda: check(torch.roll, x, 1, 0, message=name))
            compiled_only(lambda: check(torch.roll, x, (2, -1), (1, 0), message=name))
            compiled_only(lambda: check(torch.roll, x, (9, 1), (-1, -1), message=f"{name} same dim"))
            compiled_only(lambda: check(torch.roll, x, (0, 5), (0, 1), message=f"{name} no-op"))
    check(torch.roll, make((2, 3), torch.float32), (1, 2), (0,), message="shifts and dims differ")


def test_copies_stay_on_the_device():
    x = make((6, 7), torch.float32).to("kiln")

    def copies():
        a = x.t().clone()
        b = x[:, ::2].contiguous()
        c = torch.empty(7, 6, device="kiln").copy_(x.t())
        d = torch.empty(6, 7, dtype=torch.float64, device="kiln").copy_(x)
        e = x.repeat(2, 1)
        return a, b, c, d, e

    a, b, c, d, e = compiled_only(copies)
    cpu = x.cpu()
    assert torch.equal(a.cpu(), cpu.t()) and torch.equal(b.cpu(), cpu[:, ::2])
    assert torch.equal(c.cpu(), cpu.t()) and torch.equal(d.cpu(), cpu.double())
    assert torch.equal(e.cpu(), cpu.repeat(2, 1))


def test_cat_backward():
    a = make((2, 3), torch.float32).requires_grad_()
    b = make((2, 2), torch.float32).requires_grad_()
    ka, kb = (t.detach().to("kiln").requires_grad_() for t in (a, b))
    weight = make((2, 5), torch.float32)
    (torch.cat([a, b], 1) * weight).sum().backward()
    (torch.cat([ka, kb], 1) * weight.to("kiln")).sum().backward()
    assert torch.allclose(ka.grad.cpu(), a.grad) and torch.allclose(kb.grad.cpu(), b.grad)
