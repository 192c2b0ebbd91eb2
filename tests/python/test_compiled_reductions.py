"""Compiled reductions, differentially against the CPU."""
import pytest
import torch

from differential import ALL, FLOATING, INTEGRAL, assert_same, check, compiled_only, make, variants

DIMS = [None, 0, 1, -1, (0, 1), (0, 2), ()]


# float32 sums of a few hundred values round differently in another order.
SUM_TOLERANCE = {torch.float32: (2e-5, 1e-4)}


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum(dtype, keepdim):
    tolerance = SUM_TOLERANCE.get(dtype)
    for name, x in variants((4, 6, 33), dtype):
        for dims in DIMS:
            if dims is None:
                compiled_only(lambda: check(torch.sum, x, message=f"{name} all", tolerance=tolerance))
                continue
            if x.dim() == 0 and dims not in [(), 0, -1]:
                continue
            compiled_only(lambda: check(torch.sum, x, dims, keepdim=keepdim, tolerance=tolerance,
                                        message=f"{name} {dims}"))


@pytest.mark.parametrize("dtype", FLOATING)
def test_mean(dtype):
    for name, x in variants((5, 40), dtype):
        check(torch.mean, x, message=name)
        if x.dim() == 2:
            check(torch.mean, x, 0, message=name)
            check(torch.mean, x, 1, keepdim=True, message=name)
    check(torch.mean, make((4,), torch.int64), message="integer mean is an error")


@pytest.mark.parametrize("dtype", FLOATING + INTEGRAL)
@pytest.mark.parametrize("op", [torch.amax, torch.amin], ids=["amax", "amin"])
def test_amax_amin(op, dtype):
    for name, x in variants((6, 19), dtype):
        if x.numel() == 0:
            check(op, x, -1, message=f"{name}: empty reduction raises")
            continue
        check(op, x, message=name)
        if x.dim() == 2:
            check(op, x, 0, message=name)
            check(op, x, 1, True, message=name)


def test_nan_propagates_in_amax():
    x = make((3, 20), torch.float32)
    x[1, 7] = float("nan")
    check(torch.amax, x, 1)
    check(torch.amin, x, 0)


def test_sum_dtype_and_out():
    x = make((10, 3), torch.float16)
    check(torch.sum, x, 0, dtype=torch.float32)
    check(lambda a: torch.sum(a, 1, out=torch.empty(0, dtype=a.dtype, device=a.device)), x)
    check(torch.sum, make((100,), torch.bool), message="bool sums to int64")


def test_large_reductions_use_threads_correctly():
    x = make((512, 1024), torch.float32)
    # Sums of 1024 float32 values round differently in different orders.
    check(torch.sum, x, 1, tolerance=(1e-5, 1e-4))
    check(torch.sum, x, 0, tolerance=(1e-5, 1e-4))
    check(torch.amax, x.t(), 1)
    y = make((3000000,), torch.float32)
    expected = y.double().sum()
    actual = y.to("kiln").sum().cpu().double()
    assert abs(actual - expected) < 1e-3 * y.abs().sum()


def test_meta_function_checks_and_conversions():
    x = make((6, 10), torch.float32)
    # The input is converted to the output dtype before it is summed, as on the CPU.
    check(torch.sum, x * 1000, 1, dtype=torch.float16)
    check(torch.mean, x, 0, dtype=torch.float64)
    check(lambda a: torch.sum(a, 1, dtype=torch.float64, out=torch.empty(0, device=a.device)), x,
          message="dtype and out= disagree")
    check(lambda a: torch.mean(a, 1, out=torch.empty(0, dtype=torch.float64, device=a.device)), x,
          message="mean out= dtype must match")
    check(lambda a: torch.amax(a, 1, out=torch.empty(0, dtype=torch.float64, device=a.device)), x,
          message="amax out= dtype must match")
    check(torch.sum, x, (0, 0), message="repeated dim")
    check(torch.sum, x, 2, message="dim out of range")
    check(torch.mean, make((4,), torch.int64), dtype=torch.float32, message="integer mean with dtype")
    check(torch.amax, make((0, 3), torch.float32), (), message="empty amax over everything")
    check(torch.sum, x.t()[::2], (0, 1), keepdim=True)


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("op", [torch.amax, torch.amin], ids=["amax", "amin"])
def test_explicitly_vectorised_max_min_rows(op, dtype):
    # Rows long enough for the vector folds, with NaN and infinities in the
    # vector part, the tail and across whole rows; direct loads (contiguous),
    # computed elements (abs) and strided rows take different code.
    x = make((40, 203), torch.float64)
    x[3, 17] = float("nan")
    x[5, 201] = float("nan")
    x[7, 9] = float("inf")
    x[9, :] = -float("inf")
    x[11, 100] = -float("inf")
    x = x.to(dtype)
    for name, tensor in [("contiguous", x), ("sliced", x[:, 1:]), ("abs", x),
                         ("transposed", x.t().contiguous().t())]:
        fn = (lambda a: op(a.abs(), 1)) if name == "abs" else (lambda a: op(a, 1))
        compiled_only(lambda: check(fn, tensor, message=name))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("length", [8, 16, 24, 33])
def test_row_folds_combine_every_lane(dtype, length):
    # A row's vector lanes fold by halves into one value at the end (the
    # prelude's horizontal folds): row i puts its extreme, or a NaN, in
    # element i, so every lane, and the scalar tail past the last whole
    # block, must reach the result. Eager kernels take the row length at
    # run time; the compiled program's are specialised to it.
    x = make((3 * length, length), torch.float64, low=-1.0, high=1.0)
    for row in range(length):
        x[row, row] = 100.0
        x[length + row, row] = -100.0
        x[2 * length + row, row] = float("nan")
    x = x.to(dtype)

    def folds(a):
        return torch.amax(a, 1), torch.amin(a, 1), torch.sum(a, 1), torch.prod(a[:length] / 100, 1)

    tolerance = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (1e-2, 1e-2)}.get(dtype)
    compiled_only(lambda: check(folds, x, tolerance=tolerance, message="eager"))
    torch._dynamo.reset()
    compiled = compiled_only(lambda: torch.compile(folds, backend="kiln")(x.to("kiln")))
    assert_same(folds(x), compiled, "compiled", tolerance)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(5, 16), (7, 64), (3, 200), (4, 24), (9, 12), (3, 4, 40)])
def test_compiled_column_folds_in_whole_vector_blocks(dtype, shape):
    # Reductions over the leading dims keep the contiguous one: a compiled
    # program's kernel folds whole blocks of it in explicit vectors (blocks of
    # up to 64 outputs that fill whole vectors: 16, 64, 200 = 3 x 64 + 8, 24,
    # 40) and the rest element by element (12). NaN in one column.
    x = make(shape, torch.float64, low=-1.0, high=1.0)
    x.view(-1, shape[-1])[1, 3] = float("nan")
    x = x.to(dtype)
    dims = list(range(len(shape) - 1))

    def folds(a):
        # prod takes one dim: over a flattened view of the leading ones.
        rows = a.reshape(-1, a.shape[-1])
        return (torch.sum(a, dims) * 2, torch.amax(a, dims), torch.amin(a, dims), torch.prod(rows / 2 + 1, 0))

    torch._dynamo.reset()
    compiled = compiled_only(lambda: torch.compile(folds, backend="kiln")(x.to("kiln")))
    assert_same(folds(x), compiled, "compiled", (1e-5, 1e-5) if dtype == torch.float32 else None)
