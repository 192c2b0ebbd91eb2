"""Compiled mse_loss, forward and backward, differentially against the CPU."""
import copy
import warnings

import pytest
import torch
import torch.nn.functional as F

from differential import ALL, FLOATING, check, compiled_only, make, to_kiln, variants, assert_same

REDUCTIONS = ["none", "mean", "sum"]


def tolerance_for(dtype, reduction):
    # Sums of half-precision squares: the CPU and kiln add in different orders.
    if reduction == "none" or dtype in (torch.float32, torch.float64):
        return None
    return {torch.float16: (5e-3, 5e-3), torch.bfloat16: (3e-2, 3e-2)}[dtype]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_loss_over_dtypes_and_layouts(dtype, reduction):
    # Integers and bool: the CPU's "mse_cpu" refuses them, and so does kiln.
    tolerance = tolerance_for(dtype, reduction) if dtype.is_floating_point else None
    for layout, x in variants((6, 9), dtype):
        y = make(tuple(x.shape), dtype)
        compiled_only(lambda: check(F.mse_loss, x, y, reduction=reduction, tolerance=tolerance,
                                    message=layout))


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_loss_backward(dtype, reduction):
    x = make((5, 8), dtype)
    y = make((5, 8), dtype)
    grad_output = make((5, 8) if reduction == "none" else (), dtype)

    def gradients(a, b, g):
        a = a.clone().requires_grad_()
        b = b.clone().requires_grad_()
        F.mse_loss(a, b, reduction=reduction).backward(g)
        return a.grad, b.grad

    tolerance = tolerance_for(dtype, "sum")
    compiled_only(lambda: check(gradients, x, y, grad_output, tolerance=tolerance))


def test_mse_loss_broadcast_out_and_errors():
    x = make((4, 1, 3), torch.float32)
    y = make((5, 3), torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # F.mse_loss warns that the sizes differ
        compiled_only(lambda: check(F.mse_loss, x, y, reduction="none", message="broadcast"))
        compiled_only(lambda: check(F.mse_loss, x, y, message="broadcast mean"))
    a, b = make((3, 4), torch.float32), make((3, 4), torch.float32)
    compiled_only(lambda: check(
        lambda p, q: torch.ops.aten.mse_loss.out(p, q, 1, out=torch.empty(7, device=p.device)),
        a, b, message="out= of the mean is resized to a scalar"))
    compiled_only(lambda: check(
        lambda p, q: torch.ops.aten.mse_loss.out(p, q, 0, out=torch.empty(0, device=p.device)),
        a, b, message="out= of reduction none"))
    compiled_only(lambda: check(torch.ops.aten.mse_loss_backward, make((), torch.float32), a, b, 2,
                                message="backward op, sum"))
    check(F.mse_loss, a, b.double(), message="mixed dtypes")
    check(F.mse_loss, make((0, 4), torch.float32), make((0, 4), torch.float32),
          message="empty mean is nan")


def test_regression_training_step_stays_on_device():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    x, y = make((32, 8), torch.float32), make((32, 1), torch.float32)
    kiln_model = copy.deepcopy(model).to("kiln")

    def step(module, inputs, targets):
        loss = F.mse_loss(module(inputs), targets)
        loss.backward()
        return loss.detach(), module[0].weight.grad

    expected = step(model, x, y)
    actual = compiled_only(lambda: step(kiln_model, *to_kiln([x, y])))
    assert_same(expected, actual, tolerance=(1e-5, 1e-6))
