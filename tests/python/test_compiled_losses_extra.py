"""Compiled binary_cross_entropy, smooth_l1_loss and huber_loss (forward and
backward), differentially against the CPU."""
import warnings

import pytest
import torch
import torch.nn.functional as F

from differential import ALL, FLOATING, check, compiled_only, make, variants

REDUCTIONS = ["none", "mean", "sum"]


def tolerance_for(dtype, reduction):
    # Reductions of half-precision losses: the CPU and kiln add in different orders.
    if reduction == "none" or dtype in (torch.float32, torch.float64):
        return None
    return {torch.float16: (5e-3, 5e-3), torch.bfloat16: (3e-2, 3e-2)}[dtype]


def probabilities(shape, dtype):
    return make(shape, dtype, low=0.0, high=1.0)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_over_dtypes_and_layouts(dtype, reduction):
    tolerance = tolerance_for(dtype, reduction) if dtype.is_floating_point else None
    for layout, x in variants((6, 9), dtype, low=0.0, high=1.0):
        y = probabilities(tuple(x.shape), dtype)
        compiled_only(lambda: check(torch.ops.aten.binary_cross_entropy, x, y, None,
                                    ["none", "mean", "sum"].index(reduction),
                                    tolerance=tolerance, message=layout))


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_weight_and_backward(dtype, reduction):
    x = probabilities((5, 8), dtype)
    y = probabilities((5, 8), dtype)
    weight = make((8,), dtype, low=0.0, high=2.0)
    grad_output = make((5, 8) if reduction == "none" else (), dtype)

    def gradients(a, b, w, g):
        a = a.clone().requires_grad_()
        loss = F.binary_cross_entropy(a, b, weight=w, reduction=reduction)
        loss.backward(g)
        return loss, a.grad

    tolerance = tolerance_for(dtype, "sum")
    compiled_only(lambda: check(gradients, x, y, weight, grad_output, tolerance=tolerance))
    compiled_only(lambda: check(gradients, x, y, None, grad_output, tolerance=tolerance))


def test_binary_cross_entropy_edges_and_errors():
    # log(0) clamps at -100; the gradient's denominator clamps at 1e-12.
    x = torch.tensor([0.0, 1.0, 0.5, 1.0, 0.0])
    y = torch.tensor([1.0, 0.0, 0.2, 1.0, 0.0])
    compiled_only(lambda: check(F.binary_cross_entropy, x, y, reduction="none"))
    compiled_only(lambda: check(torch.ops.aten.binary_cross_entropy_backward,
                                torch.tensor(1.0), x, y, None, 1))
    compiled_only(lambda: check(F.binary_cross_entropy, probabilities((0, 3), torch.float32),
                                probabilities((0, 3), torch.float32), message="empty mean is nan"))
    compiled_only(lambda: check(F.binary_cross_entropy, probabilities((), torch.float32),
                                probabilities((), torch.float32), message="0-dim"))
    compiled_only(lambda: check(
        lambda p, q: torch.ops.aten.binary_cross_entropy.out(p, q, None, 1, out=torch.empty(3, 4, device=p.device)),
        probabilities((3, 4), torch.float32), probabilities((3, 4), torch.float32), message="out= mean"))
    good = probabilities((4, 3), torch.float32)
    for bad_input, bad_target in [(good * 3, good), (good, good - 2), (good.log(), good),
                                  (torch.full((4, 3), float("nan")), good)]:
        kiln_input, kiln_target = bad_input.to("kiln"), bad_target.to("kiln")
        with pytest.raises(RuntimeError, match="should be between 0 and 1") as expected:
            F.binary_cross_entropy(bad_input, bad_target)
        with pytest.raises(RuntimeError, match="should be between 0 and 1") as raised:
            F.binary_cross_entropy(kiln_input, kiln_target)
            torch.kiln.synchronize()
        assert str(expected.value).split("\n")[0] in str(raised.value)
    check(torch.ops.aten.binary_cross_entropy, good, good.double(), message="mixed dtypes")
    check(torch.ops.aten.binary_cross_entropy, good, good[:2], message="shape mismatch")


LOSSES = {
    "smooth_l1": lambda x, y, reduction, threshold: F.smooth_l1_loss(x, y, reduction=reduction, beta=threshold),
    "huber": lambda x, y, reduction, threshold: F.huber_loss(x, y, reduction=reduction, delta=threshold),
}


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_robust_regression_over_dtypes_and_layouts(loss, dtype, reduction):
    tolerance = tolerance_for(dtype, reduction) if dtype.is_floating_point else None
    for layout, x in variants((6, 9), dtype):
        y = make(tuple(x.shape), dtype)
        compiled_only(lambda: check(LOSSES[loss], x, y, reduction, 1.5, tolerance=tolerance,
                                    message=layout))


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_robust_regression_backward(loss, dtype, reduction):
    x = make((5, 8), dtype)
    y = make((1, 8), dtype)
    grad_output = make((5, 8) if reduction == "none" else (), dtype)
    thresholds = [0.0, 0.7] if loss == "smooth_l1" else [0.7]

    def gradients(a, b, g, threshold):
        a = a.clone().requires_grad_()
        b = b.clone().requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the target's size differs: broadcast
            result = LOSSES[loss](a, b, reduction, threshold)
        result.backward(g)
        return result, a.grad, b.grad

    for threshold in thresholds:
        compiled_only(lambda: check(gradients, x, y, grad_output, threshold,
                                    tolerance=tolerance_for(dtype, "sum"), message=str(threshold)))


def test_robust_regression_errors_and_out():
    x, y = make((3, 4), torch.float32), make((3, 4), torch.float32)
    check(torch.ops.aten.smooth_l1_loss, x, y, 1, -1.0, message="negative beta")
    check(torch.ops.aten.huber_loss, x, y, 1, 0.0, message="zero delta")
    check(torch.ops.aten.smooth_l1_loss, x, y.double(), 0, 1.0, message="mixed dtypes")
    check(torch.ops.aten.huber_loss, x, y.double(), 0, 1.0, message="mixed dtypes")
    compiled_only(lambda: check(
        lambda p, q: torch.ops.aten.huber_loss.out(p, q, 1, 1.0, out=torch.empty(3, 4, device=p.device)),
        x, y, message="huber out= mean"))
    compiled_only(lambda: check(
        lambda p, q: torch.ops.aten.smooth_l1_loss.out(p, q, 2, 1.0, out=torch.empty(7, device=p.device)),
        x, y, message="smooth_l1 out= sum"))
    compiled_only(lambda: check(torch.ops.aten.smooth_l1_loss_backward, x.long(), x.long(), y.long(),
                                0, 1.0, message="integer backward"))
    check(torch.ops.aten.huber_loss_backward, x.long(), x.long(), y.long(), 0, 1.0,
          message="huber backward refuses integers")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multi_margin_loss_forward_and_backward(dtype, p, reduction):
    x = make((5, 7), dtype)
    target = torch.tensor([0, 6, 3, 3, 1])
    weight = make((7,), dtype, low=0.1, high=2.0)
    grad_output = make((5,) if reduction == "none" else (), dtype)

    def forward_backward(a, t, w, g):
        a = a.clone().requires_grad_()
        loss = F.multi_margin_loss(a, t, p=p, margin=0.8, weight=w, reduction=reduction)
        loss.backward(g)
        return loss, a.grad

    for w in (weight, None):
        compiled_only(lambda: check(forward_backward, x, target, w, grad_output))
    compiled_only(lambda: check(forward_backward, x.t().contiguous().t(), target, weight, grad_output,
                                message="non-contiguous"))
    one = make((7,), dtype)
    compiled_only(lambda: check(F.multi_margin_loss, one, torch.tensor([2]), reduction=reduction,
                                message="1-D input"))
    compiled_only(lambda: check(F.multi_margin_loss, one, torch.tensor(2), reduction=reduction,
                                message="0-dim target"))


def test_multi_margin_loss_errors():
    x, target = make((3, 4), torch.float32), torch.tensor([0, 3, 1])
    loss = torch.ops.aten.multi_margin_loss
    check(loss, x, target, 3, message="p == 3")
    check(loss, x.half(), target, message="half")
    check(loss, x.long(), target, message="integers")
    check(loss, x, target.int(), message="int32 target")
    check(loss, x, target[:2], message="target size")
    check(loss, x, target, 1, 1.0, torch.ones(3), message="weight size")
    check(loss, x, target, 1, 1.0, torch.ones(4).double(), message="weight dtype")
    check(loss, x[:, :0], target, message="no classes")
    for bad in ([0, 4, 1], [0, -1, 1]):
        with pytest.raises(RuntimeError, match="target out of range"):
            loss(x.to("kiln"), torch.tensor(bad).to("kiln"))
            torch.kiln.synchronize()


def multilabel_targets(samples, classes):
    # Target rows: some classes, then -1 ends the list (entries after it are
    # ignored); one row with no targets, one with every class.
    rows = []
    for sample in range(samples):
        count = sample % (classes + 1)
        row = list(torch.randperm(classes)[:count].tolist()) + [-1] * (classes - count)
        if count < classes - 1:
            row[count + 1] = sample % classes  # after the -1: ignored
        rows.append(row)
    return torch.tensor(rows)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_forward_and_backward(dtype, reduction):
    x = make((7, 6), dtype)
    target = multilabel_targets(7, 6)
    grad_output = make((7,) if reduction == "none" else (), dtype)

    def forward_backward(a, t, g):
        a = a.clone().requires_grad_()
        loss = F.multilabel_margin_loss(a, t, reduction=reduction)
        loss.backward(g)
        return loss, a.grad

    compiled_only(lambda: check(forward_backward, x, target, grad_output))
    compiled_only(lambda: check(torch.ops.aten.multilabel_margin_loss_forward, x, target,
                                ["none", "mean", "sum"].index(reduction), message="is_target"))
    compiled_only(lambda: check(forward_backward, x.t().contiguous().t(), target, grad_output,
                                message="non-contiguous"))
    compiled_only(lambda: check(F.multilabel_margin_loss, x[0], target[5], reduction=reduction,
                                message="1-D"))


def test_multilabel_margin_loss_errors():
    x, target = make((3, 4), torch.float32), multilabel_targets(3, 4)
    loss = torch.ops.aten.multilabel_margin_loss_forward
    check(loss, x.half(), target, 1, message="half")
    check(loss, x, target.int(), 1, message="int32 target")
    check(loss, x, target[:2], 1, message="target size")
    check(loss, x[:, :0], target[:, :0], 1, message="no classes")
    for bad in (4, -2):
        wrong = target.clone()
        wrong[1, 0] = bad
        with pytest.raises(RuntimeError, match="'target' is out of range"):
            loss(x.to("kiln"), wrong.to("kiln"), 1)
            torch.kiln.synchronize()


@pytest.mark.parametrize("loss", ["huber_loss", "smooth_l1_loss"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_robust_regression_half_types_round_as_the_cpu(loss, dtype):
    # Each CPU kernel either rounds every step or computes in float: the
    # elementwise results must agree bit for bit.
    x, y = make((1000,), dtype, low=-60.0, high=60.0), make((1000,), dtype, low=-60.0, high=60.0)
    grad = make((1000,), dtype)
    forward = getattr(torch.ops.aten, loss)
    backward = getattr(torch.ops.aten, loss + "_backward")
    expected = forward(x, y, 0, 1.5)
    actual = compiled_only(lambda: forward(x.to("kiln"), y.to("kiln"), 0, 1.5)).cpu()
    assert torch.equal(actual, expected)
    expected = backward(grad, x, y, 0, 1.5)
    actual = compiled_only(lambda: backward(grad.to("kiln"), x.to("kiln"), y.to("kiln"), 0, 1.5)).cpu()
    assert torch.equal(actual, expected)
