"""Compiled gather-style ops (index_select, gather, take, embedding, advanced
indexing, nonzero, masked_select), differentially against the CPU, and how
out-of-range indices are reported."""
import os
import warnings

import pytest
import torch

import torch_kiln
from differential import ALL, check, compiled_only, make, variants

INDEX_DTYPES = [torch.int64, torch.int32]


def indices(count, high, dtype=torch.int64, low=0, generator=None):
    return torch.randint(low, high, (count,), generator=generator).to(dtype)


def strided(index):
    """The same values as a non-contiguous tensor."""
    wide = torch.stack([index, torch.zeros_like(index)], -1)
    return wide[..., 0]


@pytest.mark.parametrize("dtype", ALL)
def test_index_select(dtype):
    for name, x in variants((4, 6), dtype):
        for dim in ([0, 1, -1] if x.dim() == 2 else [0]):
            size = x.shape[dim] if x.dim() else 1
            if size == 0:
                compiled_only(lambda: check(torch.index_select, x, dim, torch.tensor([], dtype=torch.long)))
                continue
            for index_dtype in INDEX_DTYPES:
                index = indices(5, size, index_dtype)
                compiled_only(lambda: check(torch.index_select, x, dim, index, message=f"{name} {dim}"))
                compiled_only(lambda: check(torch.index_select, x, dim, strided(index), message=name))
    x = make((3, 4), dtype)
    compiled_only(lambda: check(torch.index_select, x, 0, torch.tensor(2)))
    compiled_only(lambda: check(torch.index_select, make((), dtype), 0, torch.tensor([0])))
    compiled_only(lambda: check(lambda a, i: torch.index_select(a, 1, i, out=torch.empty(0, dtype=a.dtype, device=a.device)),
                                x, torch.tensor([3, 0, 0])))


def test_index_select_errors():
    x = make((3, 4), torch.float32)
    check(torch.index_select, x, 0, torch.tensor([[0]]), message="2-D index")
    check(torch.index_select, x, 0, torch.tensor([0.0]), message="float index")
    check(torch.index_select, make((), torch.float32), 0, torch.tensor([0, 0]), message="scalar self")
    for bad in ([3], [-1]):
        with pytest.raises(IndexError, match="index out of range in self"):
            x.to("kiln").index_select(0, torch.tensor(bad, device="kiln"))


@pytest.mark.parametrize("dtype", ALL)
def test_gather(dtype):
    for name, x in variants((4, 5), dtype):
        if x.dim() == 0:
            compiled_only(lambda: check(torch.gather, x, 0, torch.tensor(0)))
            continue
        if x.numel() == 0:
            compiled_only(lambda: check(torch.gather, x, 1, torch.zeros(0, 3, dtype=torch.long)))
            continue
        for dim in (0, 1, -1):
            size = x.shape[dim]
            index = torch.randint(0, size, (3, 2))
            compiled_only(lambda: check(torch.gather, x, dim, index, message=f"{name} {dim}"))
            compiled_only(lambda: check(torch.gather, x, dim, index.int(), message=f"{name} {dim} int32"))
            compiled_only(lambda: check(torch.gather, x, dim, torch.randint(0, size, (2, 3)).t(), message=name))
    x = make((4, 5), dtype)
    compiled_only(lambda: check(lambda a, i: torch.gather(a, 1, i, out=torch.empty(0, dtype=a.dtype, device=a.device)),
                                x, torch.randint(0, 5, (4, 6))))


def test_gather_errors():
    x = make((3, 4), torch.float32)
    check(torch.gather, x, 1, torch.zeros(3, dtype=torch.long), message="rank mismatch")
    check(torch.gather, x, 1, torch.zeros(4, 2, dtype=torch.long), message="index larger than self")
    check(torch.gather, x, 1, torch.zeros(2, 2), message="float index")
    for bad in ([[4]], [[-1]]):
        with pytest.raises(RuntimeError, match="out of bounds for dimension 1 with size 4"):
            torch.gather(x.to("kiln"), 1, torch.tensor(bad, device="kiln"))


def test_take():
    for name, x in variants((3, 4), torch.float32):
        if x.numel() == 0:
            check(torch.take, x, torch.tensor([0]), message="take from an empty tensor")
            continue
        index = torch.randint(-x.numel(), x.numel(), (2, 5))
        compiled_only(lambda: check(torch.take, x, index, message=name))
    with pytest.raises(IndexError, match="out of range: tried to access index 12 on a tensor of 12 elements"):
        torch.take(torch.ones(3, 4, device="kiln"), torch.tensor([12], device="kiln"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("scale_grad_by_freq", [False, True])
def test_embedding_forward_and_backward(dtype, padding_idx, scale_grad_by_freq):
    torch.manual_seed(0)
    cpu = torch.nn.Embedding(10, 7, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq,
                             dtype=dtype)
    kiln = torch.nn.Embedding(10, 7, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq,
                              dtype=dtype, device="kiln")
    with torch.no_grad():
        kiln.weight.copy_(cpu.weight)
    tokens = torch.tensor([[1, 2, 3, 2], [9, 2, 1, 0], [1, 1, 1, 5]])
    weights = make((3, 4, 7), dtype)

    def step(module, tokens, weights):
        out = module(tokens)
        (out * weights).sum().backward()
        return out

    expected = step(cpu, tokens, weights)
    actual = compiled_only(lambda: step(kiln, tokens.to("kiln"), weights.to("kiln")))
    assert torch.equal(actual.cpu(), expected)
    tolerance = {torch.float16: (2e-3, 2e-3), torch.bfloat16: (2e-2, 2e-2)}.get(dtype, (1e-6, 1e-6))
    torch.testing.assert_close(kiln.weight.grad.cpu(), cpu.weight.grad, rtol=tolerance[0], atol=tolerance[1])


def test_embedding_errors():
    weight = make((5, 3), torch.float32)
    check(torch.nn.functional.embedding, torch.tensor([[1, 5]]), weight, message="index past the table")
    check(torch.nn.functional.embedding, torch.tensor([1.0]), weight, message="float indices")


@pytest.mark.parametrize("dtype", ALL)
def test_index_tensor(dtype):
    x = make((4, 5, 6), dtype)
    i = torch.tensor([0, 3, -1, 2])
    j = torch.tensor([[1], [-5]])
    cases = {
        "one": lambda a, i, j: a[i],
        "two broadcast": lambda a, i, j: a[j, i],
        "slice before": lambda a, i, j: a[:, i],
        "slice between": lambda a, i, j: a[i, :, i],
        "three": lambda a, i, j: a[i, i, i],
        "int32": lambda a, i, j: a[i.int(), :, j.int()],
        "scalar": lambda a, i, j: a[i[1], 2:, i],
        "ellipsis": lambda a, i, j: a[..., i],
        "empty": lambda a, i, j: a[i[:0]],
    }
    for name, fn in cases.items():
        compiled_only(lambda: check(fn, x, i, j, message=name))
        compiled_only(lambda: check(fn, x.transpose(0, 2).contiguous().transpose(0, 2), strided(i), j,
                                    message=f"{name} non-contiguous"))
    compiled_only(lambda: check(lambda a, i: a[i.to("cpu") if a.device.type == "kiln" else i], x, i,
                                message="CPU indices"))


def test_index_many_tensors():
    x = make((2, 3, 2, 3, 2, 3), torch.float32)
    index = [torch.randint(0, s, (4,)) for s in x.shape]
    compiled_only(lambda: check(lambda a, *ix: a[ix], x, *index, message="six index tensors"))
    compiled_only(lambda: check(lambda a, *ix: a[ix[0], :, ix[2], ix[3], ix[4]], x, *index, message="five"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.float16])
def test_bool_mask_indexing(dtype):
    for name, x in variants((5, 6), dtype):
        mask = make(x.shape, torch.bool)
        compiled_only(lambda: check(lambda a, m: a[m], x, mask, message=name))
        if x.dim() == 2:
            row = make((x.shape[0],), torch.bool)
            compiled_only(lambda: check(lambda a, m: a[m], x, row, message=f"{name} rows"))
            compiled_only(lambda: check(lambda a, m: a[:, m], x, make((x.shape[1],), torch.bool), message=name))
            compiled_only(lambda: check(lambda a, m: a[m, 1:4], x, row, message=f"{name} mask and slice"))
            compiled_only(lambda: check(lambda a, m, i: a[m, i], x, row, torch.tensor([0]), message=name))
            compiled_only(lambda: check(lambda a, m: a[m.t().contiguous().t()], x, mask, message=name))
    x = make((5, 6), dtype)
    check(lambda a: a[torch.zeros(5, 6, dtype=torch.bool, device=a.device)], x, message="all false")
    check(lambda a: a[torch.ones(4, dtype=torch.bool, device=a.device)], x, message="mask shape mismatch")


def test_index_errors():
    x = make((3, 4), torch.float32)
    check(lambda a: a[torch.tensor([0], device=a.device), torch.tensor([0, 1, 2], device=a.device)],
          x, message="indices do not broadcast")
    check(lambda a: a[torch.tensor([0.0], device=a.device)], x, message="float index")
    check(lambda a: a[torch.zeros(1, 1, 1, dtype=torch.long, device=a.device)].sum(), x, message="ok")
    check(lambda a: a[:, :, torch.tensor([0], device=a.device)], x, message="too many indices")
    for index, message in [((torch.tensor([3]),), "index 3 is out of bounds for dimension 0 with size 3"),
                           ((slice(None), torch.tensor([-5])), "index -5 is out of bounds for dimension 0 with size 4"),
                           ((torch.tensor([0]), torch.tensor([9])), "index 9 is out of bounds for dimension 1 with size 4")]:
        kiln_index = tuple(i.to("kiln") if isinstance(i, torch.Tensor) else i for i in index)
        with pytest.raises(IndexError, match=message):
            x.to("kiln")[kiln_index]


@pytest.mark.parametrize("dtype", ALL)
def test_nonzero(dtype):
    for name, x in variants((4, 7), dtype):
        if dtype.is_floating_point and x.dim() == 2 and x.shape[0] > 0:
            x = x.clone()
            x[0, 1] = float("nan")
        compiled_only(lambda: check(torch.nonzero, x, message=name))
        compiled_only(lambda: check(torch.nonzero, x, as_tuple=True, message=name))
        compiled_only(lambda: check(torch.argwhere, x, message=name))
    check(torch.nonzero, torch.zeros(3, 4, dtype=dtype), message="all zero")
    x = make((2, 3, 4), dtype)
    compiled_only(lambda: check(lambda a: torch.nonzero(a, out=torch.empty(0, dtype=torch.long, device=a.device)), x))


def test_nonzero_lays_out_its_result_as_the_cpu_does():
    # The transpose of a (rank, count) tensor, strides (1, count): each dim's
    # indices are contiguous. out= of the result's shape keeps its strides.
    cases = [torch.tensor([[0, 1, 2], [3, 0, 4]]), torch.zeros(3, 4), torch.tensor(5), torch.tensor(0),
             make((3, 4, 5), torch.float32) > 0, torch.tensor([True, False, True])]
    for x in cases:
        expected, actual = torch.nonzero(x), torch.nonzero(x.to("kiln"))
        assert actual.stride() == expected.stride(), x
        assert torch.equal(actual.cpu(), expected)
        assert torch.where(x.to("kiln"))[0].is_contiguous() if x.dim() else True
    x = make((4, 5), torch.float32) > 0
    count = int(x.sum())
    for out in (torch.empty(0, dtype=torch.long), torch.empty(count, 2, dtype=torch.long),
                torch.empty(2, count, dtype=torch.long).t(), torch.empty(50, 2, dtype=torch.long)):
        expected, actual = out.clone(), out.to("kiln")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resize_output's warning for the (50, 2) out, on both
            torch.nonzero(x, out=expected)
            torch.nonzero(x.to("kiln"), out=actual)
        assert actual.stride() == expected.stride() and torch.equal(actual.cpu(), expected)


def test_masked_select():
    for dtype in [torch.float32, torch.int32, torch.bool, torch.bfloat16]:
        for name, x in variants((4, 6), dtype):
            mask = make(x.shape, torch.bool)
            compiled_only(lambda: check(torch.masked_select, x, mask, message=f"{dtype} {name}"))
        x = make((4, 6), dtype)
        compiled_only(lambda: check(torch.masked_select, x, make((6,), torch.bool), message="broadcast mask"))
        compiled_only(lambda: check(torch.masked_select, make((6,), dtype), make((4, 6), torch.bool), message="broadcast self"))
        compiled_only(lambda: check(lambda a, m: torch.masked_select(a, m, out=torch.empty(0, dtype=a.dtype, device=a.device)),
                                    x, make((4, 6), torch.bool)))
    check(torch.masked_select, make((3,), torch.float32), torch.tensor([1, 0, 1]), message="non-bool mask")


def test_compacting_results_own_storage_of_their_size():
    """masked_select and nonzero write each element they drop to a scratch slot
    past the result: the slot is outside the result's storage, whose size is
    the CPU's (a nested tensor takes its buffer's whole storage as its data)."""
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(0))
    for threshold in (0.0, 10.0, -10.0):  # some kept, none kept, all kept
        for fn in (lambda a: torch.masked_select(a, a > threshold), lambda a: torch.nonzero(a > threshold),
                   lambda a: a[a > threshold]):
            expected, actual = fn(x), fn(x.to("kiln"))
            assert actual.untyped_storage().nbytes() == expected.untyped_storage().nbytes() == \
                actual.numel() * actual.element_size(), threshold
            torch.testing.assert_close(actual.cpu(), expected)
    y = torch.masked_select(x.to("kiln"), x.to("kiln") > 0)
    assert torch.equal(torch.tensor([], dtype=y.dtype).set_(y.untyped_storage().cpu()), y.cpu())


def test_gather_family_backward():
    x = make((5, 6), torch.float32)
    index = torch.tensor([[0, 4, 4], [1, 1, 2]])
    cases = {
        "gather": lambda a: torch.gather(a, 1, index.to(a.device)),
        "index_select": lambda a: torch.index_select(a, 0, torch.tensor([4, 0, 4, 4], device=a.device)),
        "index": lambda a: a[torch.tensor([1, 1, 3], device=a.device), torch.tensor([0, 0, 5], device=a.device)],
        "mask": lambda a: a[(x > 0).to(a.device)],
        "take": lambda a: torch.take(a, torch.tensor([0, 29, -1, 3], device=a.device)),
    }
    for name, fn in cases.items():
        cpu = x.clone().requires_grad_()
        kiln = x.to("kiln").requires_grad_()
        fn(cpu).pow(2).sum().backward()
        compiled_only(lambda: fn(kiln).pow(2).sum().backward())
        torch.testing.assert_close(kiln.grad.cpu(), cpu.grad, msg=name)


@pytest.mark.skipif(os.environ.get("KILN_LAUNCH_BLOCKING") == "1",
                    reason="blocking launches report at the op itself")
def test_out_of_range_is_reported_at_the_next_sync_when_queued():
    """With work queued, the check runs after it: the op returns, and the
    next synchronising call raises, as CUDA reports a device-side assert."""
    big = torch.ones(4096, 4096, device="kiln")
    x = torch.ones(3, 4, device="kiln")
    index = torch.tensor([0, 7], device="kiln")  # host copies wait for the stream: make it first
    for _ in range(3):
        big = big + 1  # keeps the stream busy
    result = x[index]
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 0 with size 3"):
        torch.kiln.synchronize()
    # The stream stays usable and the kernel never touched memory outside x.
    assert result.shape == (2, 4)
    assert torch.equal(x[torch.tensor([2, -1], device="kiln")].cpu(), torch.ones(2, 4))
