"""Compiled softmax and log_softmax, forward and backward, differentially
against the CPU."""
import pytest
import torch

import torch_kiln
from differential import FLOATING, assert_same, check, compiled_only, kernels_launched, make, to_kiln, variants

OPS = [torch.softmax, torch.log_softmax]
IDS = ["softmax", "log_softmax"]


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_forward_over_layouts_and_dims(op, dtype):
    for name, x in variants((4, 6, 33), dtype):
        for dim in range(-max(x.dim(), 1), max(x.dim(), 1)):
            compiled_only(lambda: check(op, x, dim, message=f"{name} dim {dim}"))


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_out_and_dtype_argument(op):
    x = make((5, 17), torch.float32)
    overload = torch.ops.aten._softmax.out if op is torch.softmax else torch.ops.aten._log_softmax.out
    check(lambda a: overload(a, 1, False, out=torch.empty(0, device=a.device)), x)
    # The dtype argument converts the input first (on every device but CUDA).
    check(op, x.half(), 1, dtype=torch.float32)
    check(op, x, 0, dtype=torch.float64)


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_special_values_match_the_cpu(op):
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[-inf, -inf, -inf, -inf],   # all -inf: NaN
                      [inf, 1.0, 2.0, 3.0],        # +inf: NaN
                      [nan, 1.0, 2.0, 3.0],        # NaN: NaN
                      [-inf, 0.0, 1.0, -inf],      # some -inf: 0 / -inf there
                      [1e30, -1e30, 0.0, 1e30]])   # huge: stable
    for dim in (0, 1):
        compiled_only(lambda: check(op, x, dim, message=f"dim {dim}"))
        compiled_only(lambda: check(op, x.double(), dim, message=f"double dim {dim}"))


def test_integer_input_is_an_error():
    check(torch.softmax, make((3, 4), torch.int64), 1)
    check(torch.ops.aten._log_softmax, make((3, 4), torch.int32), 0, False)


def test_bad_dim_is_an_error():
    check(torch.softmax, make((3, 4), torch.float32), 2)
    check(torch.log_softmax, make((), torch.float32), 1)


def test_half_to_float_widens_float16_only():
    x = make((6, 40), torch.float16)
    actual = compiled_only(lambda: torch.ops.aten._softmax(x.to("kiln"), 1, True))
    assert_same(torch.softmax(x.float(), 1), actual)
    actual = torch.ops.aten._log_softmax(x.to("kiln"), 0, True)
    assert_same(torch.log_softmax(x.float(), 0), actual)
    with pytest.raises(RuntimeError, match="Half type only"):
        torch.ops.aten._softmax(make((3,), torch.float32).to("kiln"), 0, True)
    # The backward of a half_to_float softmax: float grad, half grad_input.
    y = torch.softmax(x.float(), 1)
    grad = make((6, 40), torch.float32)
    expected = torch.ops.aten._softmax_backward_data(grad, y, 1, torch.float32).half()
    actual = torch.ops.aten._softmax_backward_data(grad.to("kiln"), y.to("kiln"), 1, torch.float16)
    assert_same(expected, actual, tolerance=(1e-3, 1e-3))


def test_large_rows_split_over_threads():
    x = make((64, 4096), torch.float32)
    compiled_only(lambda: check(torch.softmax, x, 1))
    compiled_only(lambda: check(torch.log_softmax, x, 0))


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_rows_along_the_fastest_dim_run_as_one_kernel(op):
    # (shape, dim, kernels forward, kernels backward): a row kernel takes rows
    # of neighbours, many rows or few elements in all; few long rows and
    # strided rows take a maximum, a sum and an elementwise kernel.
    cases = [((64, 10), 1, 1, 1), ((4, 6, 33), 2, 1, 1), ((4, 6, 33), 1, 3, 2), ((64, 10), 0, 3, 2),
             ((2, 40000), 1, 3, 2)]
    for shape, dim, forward, backward in cases:
        x = make(shape, torch.float32)
        grad = make(shape, torch.float32)
        x_kiln, grad_kiln = to_kiln(x), to_kiln(grad)
        assert kernels_launched(lambda: op(x_kiln, dim)) == forward, (shape, dim)
        output = op(x_kiln, dim)
        backward_op = (torch.ops.aten._softmax_backward_data if op is torch.softmax
                       else torch.ops.aten._log_softmax_backward_data)
        assert kernels_launched(lambda: backward_op(grad_kiln, output, dim, torch.float32)) == backward, (shape, dim)
        compiled_only(lambda: check(op, x, dim, message=f"{shape} dim {dim}"))
        compiled_only(lambda: assert_same(grads(op, x, dim, grad), grads(op, x_kiln, dim, grad_kiln),
                                          f"{shape} dim {dim}"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_rows_longer_than_the_row_buffers_are_recomputed(op, dtype):
    # A shape-generic row kernel keeps a row's exponentials in 32 KiB of
    # buffers when the row fits and computes them again when it does not:
    # 40 rows of 10000 run as one row kernel, each row past the buffers.
    x = make((40, 10000), dtype)
    grad = make((40, 10000), dtype)
    x_kiln = to_kiln(x)
    assert kernels_launched(lambda: op(x_kiln, 1)) == 1
    tolerance = (2e-2, 2e-2) if dtype == torch.bfloat16 else None
    compiled_only(lambda: check(op, x, 1, tolerance=tolerance))
    if dtype != torch.bfloat16:
        compiled_only(lambda: assert_same(grads(op, x, 1, grad), grads(op, x_kiln, 1, to_kiln(grad))))


def grads(op, x, dim, grad):
    leaf = x.detach().clone().requires_grad_()
    op(leaf, dim).backward(grad)
    return leaf.grad


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_backward_matches_the_cpu(op, dtype):
    for name, x in variants((4, 6, 33), dtype):
        if x.numel() == 0:
            continue
        grad = make(tuple(x.shape), dtype)
        for dim in range(-max(x.dim(), 1), max(x.dim(), 1)):
            expected = grads(op, x, dim, grad)
            actual = compiled_only(lambda: grads(op, to_kiln(x), dim, to_kiln(grad)))
            if dtype in (torch.float32, torch.float64):
                assert_same(expected, actual, f"{name} dim {dim}")
                continue
            # Half types: the backward amplifies the forward's rounding (one
            # ulp of the output times the row sum), so kiln and the CPU each
            # differ from the exact gradient; kiln must be as close as the CPU.
            exact = grads(op, x.double(), dim, grad.double())
            cpu_error = (expected.double() - exact).abs().max().item()
            kiln_error = (actual.cpu().double() - exact).abs().max().item()
            assert actual.dtype == dtype and kiln_error <= 1.25 * cpu_error + 1e-3, (name, dim, cpu_error, kiln_error)


@pytest.mark.parametrize("op", [torch.ops.aten._softmax_backward_data, torch.ops.aten._log_softmax_backward_data],
                         ids=["softmax", "log_softmax"])
def test_backward_out_and_errors(op):
    grad, output = make((5, 9), torch.float32), torch.softmax(make((5, 9), torch.float32), 1)
    check(lambda g, o: op(g, o, 1, torch.float32, out=torch.empty(0, device=g.device)), grad, output)
    check(op, grad.long(), output.long(), 1, torch.int64)
    if op is torch.ops.aten._softmax_backward_data:
        check(op, grad, output[:3], 1, torch.float32)
