"""Compiled scatter-style ops (scatter, scatter_add, scatter_reduce,
index_put_, index_add, index_copy, put_, masked_scatter, embedding backward),
differentially against the CPU. Sums over duplicate indices may add in another
order than the CPU: float results get a tolerance, and half types are tested
with integer values, whose sums are exact."""
import pytest
import torch

import torch_kiln
from differential import ALL, FLOATING, check, compiled_only, make, variants

SUM_TOLERANCE = (1e-5, 1e-5)


def unique_index(shape, size, dim, generator=None):
    """An index for scatter along `dim` with distinct values along it."""
    index = torch.empty(shape, dtype=torch.long)
    moved = index.movedim(dim, -1)
    for position in range(moved[..., 0].numel()):
        moved.reshape(-1, moved.shape[-1])[position] = torch.randperm(size)[: moved.shape[-1]]
    return index


def integer_valued(shape, dtype):
    return make(shape, torch.int64).to(dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_scatter_src_and_value(dtype):
    for name, x in variants((5, 6), dtype):
        if x.dim() < 2 or x.numel() == 0:
            continue
        for dim in (0, 1, -1):
            index = unique_index((3, 4), x.shape[dim], dim % 2)
            src = make((4, 5), dtype)
            compiled_only(lambda: check(torch.scatter, x, dim, index, src, message=f"{name} {dim}"))
            compiled_only(lambda: check(torch.scatter, x, dim, index, 1, message=f"{name} {dim} value"))
            compiled_only(lambda: check(torch.scatter, x, dim, index.t().contiguous().t(), src.t(),
                                        message=f"{name} {dim} non-contiguous"))
    x = make((5, 6), dtype)
    index = unique_index((3, 4), 6, 1)
    compiled_only(lambda: check(lambda a, i, s: a.clone().scatter_(1, i, s), x, index, make((3, 4), dtype)))
    compiled_only(lambda: check(lambda a, i: a.clone().scatter_(1, i, 2.5), x, index))
    compiled_only(lambda: check(lambda a, i, s: torch.scatter(a, 1, i, s, out=torch.empty(0, dtype=a.dtype, device=a.device)),
                                x, index, make((3, 4), dtype)))
    compiled_only(lambda: check(torch.scatter, make((), dtype), 0, torch.tensor(0), make((), dtype)))
    compiled_only(lambda: check(torch.scatter, x, 0, torch.zeros(0, 6, dtype=torch.long), make((0, 6), dtype)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.bool])
def test_scatter_add_with_duplicates(dtype):
    x = integer_valued((4, 7), dtype)
    index = torch.randint(0, 7, (6, 9))[:4, ::2]  # non-contiguous, many duplicates
    src = integer_valued((4, 5), dtype)
    compiled_only(lambda: check(torch.scatter_add, x, 1, index, src))
    compiled_only(lambda: check(lambda a, i, s: a.clone().scatter_add_(0, i, s), x, torch.randint(0, 4, (4, 5)), src))
    compiled_only(lambda: check(torch.scatter, x, 1, index, src, reduce="add"))
    if dtype != torch.bool:
        compiled_only(lambda: check(torch.scatter, x, 1, index, 2, reduce="multiply"))
    if dtype in (torch.float32, torch.float64):
        y, s = make((4, 7), dtype), make((4, 5), dtype)
        compiled_only(lambda: check(torch.scatter_add, y, 1, index, s, tolerance=SUM_TOLERANCE))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32])
def test_scatter_reduce(reduce, include_self, dtype):
    x = make((5, 6), dtype, low=-2, high=3)
    src = make((5, 8), dtype, low=-2, high=3)
    index = torch.randint(0, 6, (5, 8))
    tolerance = SUM_TOLERANCE if dtype in (torch.float32, torch.float64) else None
    if dtype.is_floating_point and dtype != torch.float64 and reduce in ("sum", "mean", "prod"):
        x, src = integer_valued((5, 6), dtype), integer_valued((5, 8), dtype)
    compiled_only(lambda: check(torch.scatter_reduce, x, 1, index, src, reduce, include_self=include_self,
                                tolerance=tolerance))
    compiled_only(lambda: check(torch.scatter_reduce, x, 0, torch.randint(0, 5, (3, 6)), src[:3, :6], reduce,
                                include_self=include_self, tolerance=tolerance))
    compiled_only(lambda: check(lambda a, i, s: a.clone().scatter_reduce_(1, i, s, reduce, include_self=include_self),
                                x, index, src, tolerance=tolerance))


def test_scatter_reduce_nan_and_bool():
    x = make((3, 4), torch.float32)
    src = make((3, 4), torch.float32)
    src[1, 2] = float("nan")
    index = torch.randint(0, 4, (3, 4))
    for reduce in ("amax", "amin", "prod"):
        compiled_only(lambda: check(torch.scatter_reduce, x, 1, index, src, reduce))
    b = make((3, 4), torch.bool)
    for reduce in ("sum", "prod", "amax", "amin"):
        compiled_only(lambda: check(torch.scatter_reduce, b, 1, index, make((3, 4), torch.bool), reduce,
                                    include_self=False))
    check(torch.scatter_reduce, b, 1, index, b, "mean", message="mean of bool is not implemented")


def test_scatter_errors():
    x = make((3, 4), torch.float32)
    index = torch.tensor([[0, 1]])
    check(torch.scatter, x, 1, index, make((1, 2), torch.float64), message="dtype mismatch")
    check(torch.scatter, x, 1, index.float(), x, message="float index")
    check(torch.scatter, x, 1, torch.zeros(4, 1, dtype=torch.long), x, message="index larger than self")
    check(torch.scatter, x, 1, index, x, reduce="sum", message="bad legacy reduce")
    check(torch.scatter_reduce, x, 1, index, x, "median", message="bad reduce")
    for bad in ([[4]], [[-1]]):
        with pytest.raises(RuntimeError, match="out of bounds for dimension 1 with size 4"):
            torch.scatter_add(x.to("kiln"), 1, torch.tensor(bad, device="kiln"), x.to("kiln"))
    kiln = x.to("kiln")
    with pytest.raises(RuntimeError, match="index 3 is out of bounds"):
        kiln.scatter_(0, torch.tensor([[3]], device="kiln"), 9.0)
    assert torch.equal(kiln.cpu(), x), "an op that raised left its input untouched"


@pytest.mark.parametrize("dtype", ALL)
def test_index_put(dtype):
    x = make((5, 6, 3), dtype)
    rows = torch.tensor([4, 0, 2])
    cols = torch.tensor([[1], [5]])
    def put(index):
        def run(a, i, v):
            return a.index_put(index(a, i), v)
        return run

    cases = {
        "rows": (put(lambda a, i: (i,)), (rows, make((3, 6, 3), dtype))),
        "broadcast value": (put(lambda a, i: (i,)), (rows, make((3,), dtype))),
        "scalar value": (put(lambda a, i: (i,)), (rows, make((), dtype))),
        "slice before": (put(lambda a, i: (None, i)), (rows[:2] + 1, make((5, 2, 3), dtype))),
        "two broadcast": (put(lambda a, i: (i, cols.to(a.device))), (rows, make((2, 3, 3), dtype))),
        "non-adjacent": (put(lambda a, i: (i, None, i.clamp(max=2))), (rows, make((3, 6), dtype))),
    }
    for name, (fn, arguments) in cases.items():
        compiled_only(lambda: check(lambda a, *r: fn(a.clone(), *r), x, *arguments, message=name))
        compiled_only(lambda: check(lambda a, *r: fn(a.transpose(0, 1).contiguous().transpose(0, 1), *r), x,
                                    *arguments, message=f"{name} non-contiguous"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.bool])
def test_index_put_accumulate(dtype):
    x = integer_valued((5, 4), dtype)
    rows = torch.tensor([0, 4, 0, 0, 2, -1])
    values = integer_valued((6, 4), dtype)
    compiled_only(lambda: check(lambda a, i, v: a.index_put((i,), v, accumulate=True), x, rows, values))
    compiled_only(lambda: check(lambda a, i, j, v: a.index_put((i, j), v, accumulate=True), x, rows,
                                torch.tensor([0, 1, 0, 0, 3, 3]), values[:, 0]))
    compiled_only(lambda: check(lambda a, m, v: a.index_put((m,), v, accumulate=True), x, x != 0, make((), dtype)))
    if dtype.is_floating_point:
        y, v = make((5, 4), dtype), make((6, 4), dtype)
        tolerance = SUM_TOLERANCE if dtype in (torch.float32, torch.float64) else None
        compiled_only(lambda: check(lambda a, i, v: a.index_put((i,), v, accumulate=True), y, rows, v,
                                    tolerance=tolerance))


def test_setitem_forms():
    x = make((6, 5), torch.float32)

    def assign(a, mask):
        a = a.clone()
        a[mask] = 0.25
        a[torch.tensor([1, 3], device=a.device)] = torch.arange(5.0, device=a.device)
        a[:, torch.tensor([True, False, True, False, False], device=a.device)] = -1.0
        a[torch.tensor([0, 5], device=a.device), torch.tensor([4, 0], device=a.device)] = torch.tensor(7.0)
        a[2] = torch.tensor([9.0], dtype=torch.float64)
        return a

    compiled_only(lambda: check(assign, x, x > 0.5))


def test_index_put_errors():
    x = make((3, 4), torch.float32)
    check(lambda a: a.index_put((torch.tensor([0, 1], device=a.device),), torch.ones(3, device=a.device)),
          x, message="value shape")
    check(lambda a: a.index_put((torch.tensor([0], device=a.device),), torch.ones(4, dtype=torch.float64, device=a.device)),
          x, message="dtype mismatch")
    for accumulate in (False, True):
        with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
            x.to("kiln").index_put_((torch.tensor([3], device="kiln"),), torch.tensor(1.0), accumulate)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
                                   torch.int32, torch.bool])
def test_index_add(dtype):
    for name, x in variants((5, 4), dtype):
        if x.dim() != 2:
            continue
        if dtype.is_floating_point:
            x.round_()  # exact sums whatever the order (the view keeps its layout)
        for dim in (0, 1, -1):
            count = 6
            index = torch.randint(0, x.shape[dim], (count,)) if x.shape[dim] else torch.zeros(0, dtype=torch.long)
            count = index.numel()
            shape = list(x.shape)
            shape[dim] = count
            source = integer_valued(tuple(shape), dtype)
            compiled_only(lambda: check(torch.index_add, x, dim, index, source, message=f"{name} {dim}"))
            if dtype != torch.bool:
                compiled_only(lambda: check(torch.index_add, x, dim, index.int(), source, alpha=3, message=name))
    compiled_only(lambda: check(torch.index_add, make((), dtype), 0, torch.tensor([0]), make((), dtype)))
    compiled_only(lambda: check(lambda a, i, s: a.clone().index_add_(0, i, s), make((4,), dtype),
                                torch.tensor([1, 1, 3]), integer_valued((3,), dtype)))


def test_index_add_errors():
    x = make((3, 4), torch.float32)
    check(torch.index_add, x, 0, torch.tensor([0]), make((1, 3), torch.float32), message="slice shape")
    check(torch.index_add, x, 0, torch.tensor([[0]]), make((1, 4), torch.float32), message="2-D index")
    check(torch.index_add, x, 0, torch.tensor([0, 1]), make((1, 4), torch.float32), message="count")
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        torch.index_add(x.to("kiln"), 0, torch.tensor([3], device="kiln"), torch.ones(1, 4, device="kiln"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_index_copy(dtype):
    x = make((5, 4), dtype)
    compiled_only(lambda: check(torch.index_copy, x, 0, torch.tensor([4, 0, 2]), make((3, 4), dtype)))
    compiled_only(lambda: check(torch.index_copy, x, -1, torch.tensor([3, 1]), make((2, 5), dtype).t().contiguous().t()))
    compiled_only(lambda: check(lambda a, i, s: a.clone().index_copy_(1, i, s), x, torch.tensor([2]), make((5, 1), dtype)))
    compiled_only(lambda: check(torch.index_copy, make((3,), dtype), 0, torch.tensor([1]), make((), dtype)))
    check(torch.index_copy, x, 0, torch.tensor([0]), make((1, 3), dtype), message="slice shapes")
    with pytest.raises(IndexError, match=r"index_copy_\(\): index 5 is out of bounds for dimension 0 with size 5"):
        torch.index_copy(x.to("kiln"), 0, torch.tensor([5], device="kiln"), make((1, 4), dtype).to("kiln"))


def test_put():
    for name, x in variants((3, 4), torch.float32):
        if x.numel() == 0:
            continue
        index = torch.randint(-x.numel(), x.numel(), (5,))
        source = integer_valued((5,), torch.float32)
        unique = torch.randperm(x.numel())[: min(5, x.numel())]
        compiled_only(lambda: check(lambda a, i, s: a.clone().put_(i, s), x, unique, source[: unique.numel()], message=name))
        compiled_only(lambda: check(lambda a, i, s: a.clone().put_(i, s, accumulate=True), x, index, source, message=name))
        compiled_only(lambda: check(lambda a, i, s: a.clone().t().put_(i, s, accumulate=True), x, index, source,
                                    message=f"{name} t"))
    with pytest.raises(IndexError, match="out of range: tried to access index 12 on a tensor of 12 elements"):
        torch.zeros(3, 4, device="kiln").put_(torch.tensor([12], device="kiln"), torch.ones(1, device="kiln"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.float16])
def test_masked_scatter(dtype):
    for name, x in variants((4, 6), dtype):
        mask = make(x.shape, torch.bool)
        source = make((30,), dtype)
        compiled_only(lambda: check(lambda a, m, s: a.clone().masked_scatter_(m, s), x, mask, source, message=name))
        compiled_only(lambda: check(torch.masked_scatter, x, mask, source.view(5, 6), message=name))
    x = make((4, 6), dtype)
    compiled_only(lambda: check(torch.masked_scatter, x, make((6,), torch.bool), make((24,), dtype), message="broadcast"))
    check(torch.masked_scatter, x, torch.ones(4, 6, dtype=torch.bool), make((3,), dtype), message="source too small")
    check(torch.masked_scatter, x, torch.ones(4, 6, dtype=torch.uint8), make((24,), dtype), message="byte mask")


def test_embedding_dense_backward_direct():
    grad = make((3, 4, 5), torch.float32)
    tokens = torch.tensor([[0, 6, 6, 2], [2, 2, 0, 1], [6, 6, 6, 6]])
    for padding_idx in (-1, 6):
        for scale in (False, True):
            compiled_only(lambda: check(torch.ops.aten.embedding_dense_backward, grad, tokens, 7, padding_idx, scale,
                                        tolerance=SUM_TOLERANCE))
            compiled_only(lambda: check(torch.ops.aten.embedding_dense_backward, grad, tokens.int(), 7, padding_idx,
                                        scale, tolerance=SUM_TOLERANCE))
    check(torch.ops.aten.embedding_dense_backward, grad, tokens.float(), 7, -1, False, message="float indices")


def test_scatter_family_backward():
    x = make((4, 5), torch.float32)
    src = make((4, 3), torch.float32)
    index = torch.tensor([[0, 4, 4], [1, 1, 2], [3, 3, 3], [0, 1, 2]])
    cases = {
        "scatter_add": lambda a, s: torch.scatter_add(a, 1, index.to(a.device), s),
        "scatter": lambda a, s: torch.scatter(a, 1, torch.tensor([[0, 1, 2]] * 4, device=a.device), s),
        "index_put": lambda a, s: a.index_put((torch.tensor([1, 3], device=a.device),), s[:2, :1], accumulate=True),
        "index_add": lambda a, s: a.index_add(1, torch.tensor([4, 0, 4], device=a.device), s),
        "masked_scatter": lambda a, s: a.masked_scatter((x > 0).to(a.device), s.repeat(2, 1)),
    }
    for name, fn in cases.items():
        cpu_a, cpu_s = x.clone().requires_grad_(), src.clone().requires_grad_()
        kiln_a, kiln_s = x.to("kiln").requires_grad_(), src.to("kiln").requires_grad_()
        fn(cpu_a, cpu_s).pow(2).sum().backward()
        compiled_only(lambda: fn(kiln_a, kiln_s).pow(2).sum().backward())
        torch.testing.assert_close(kiln_a.grad.cpu(), cpu_a.grad, msg=name)
        torch.testing.assert_close(kiln_s.grad.cpu(), cpu_s.grad, msg=name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_index_fill(dtype):
    for name, x in variants((4, 5), dtype):
        for dim in ([0, 1, -1] if x.dim() == 2 else [0]):
            size = x.shape[dim] if x.dim() else 1
            index = torch.randint(-size, size, (3,)) if size else torch.zeros(0, dtype=torch.long)
            compiled_only(lambda: check(torch.index_fill, x, dim, index, 2.5, message=f"{name} {dim}"))
            compiled_only(lambda: check(torch.index_fill, x, dim, index, torch.tensor(-1), message=name))
    x = make((4, 5), dtype)
    compiled_only(lambda: check(lambda a, i: a.clone().index_fill_(1, i, 1), x, torch.tensor(3)))
    check(torch.index_fill, x, 1, torch.tensor([1], dtype=torch.int32), 2.0, message="int32 index")
    check(torch.index_fill, x, 1, torch.tensor([1]), torch.tensor([2.0]), message="1-D value")
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 5"):
        torch.index_fill(x.to("kiln"), 1, torch.tensor([5], device="kiln"), 0)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_index_reduce(reduce, include_self, dtype):
    x = integer_valued((5, 4), dtype)
    source = integer_valued((5, 7), dtype)
    index = torch.tensor([0, 3, 3, 1, 0, 3, 2])
    compiled_only(lambda: check(torch.index_reduce, x, 1, index, source, reduce, include_self=include_self))
    compiled_only(lambda: check(lambda a, i, s: a.clone().index_reduce_(0, i, s, reduce, include_self=include_self),
                                x, index[:3], source[:3, :4].t().contiguous().t()))


def test_index_reduce_errors():
    x = make((3, 4), torch.float32)
    check(torch.index_reduce, x, 0, torch.tensor([0]), make((1, 4), torch.float32), "sum", message="sum")
    check(torch.index_reduce, make((3,), torch.bool), 0, torch.tensor([0]), make((1,), torch.bool), "amax")
    with pytest.raises(IndexError, match="index out of range in self"):
        torch.index_reduce(x.to("kiln"), 0, torch.tensor([-1], device="kiln"), torch.ones(1, 4, device="kiln"), "prod")
