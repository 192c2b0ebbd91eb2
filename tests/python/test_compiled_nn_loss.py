"""Compiled nll_loss and nll_loss2d (and cross_entropy through them),
forward and backward, differentially against the CPU."""
import pytest
import torch
import torch.nn.functional as F

import torch_kiln
from differential import FLOATING, assert_same, check, compiled_only, kernels_launched, make, to_kiln

REDUCTIONS = ["none", "mean", "sum"]


def tolerance_for(dtype):
    # The CPU sums half losses in half precision; kiln sums in float32.
    return {torch.float16: (5e-3, 5e-3), torch.bfloat16: (3e-2, 3e-2)}.get(dtype)


def targets(shape, classes, ignore=None, generator_seed=0):
    generator = torch.Generator().manual_seed(generator_seed)
    target = torch.randint(0, classes, shape, generator=generator)
    if ignore is not None and target.numel() > 2:
        target.view(-1)[::3] = ignore
    return target


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_forward(dtype, reduction):
    x = make((13, 7), dtype)
    weight = make((7,), dtype, low=0.1, high=2.0)
    for ignore in (-100, 2):
        t = targets((13,), 7, ignore)
        for w in (None, weight):
            # The weight goes positionally: check() moves positional tensors to kiln.
            compiled_only(lambda: check(F.nll_loss, x, t, w, ignore_index=ignore, reduction=reduction,
                                        message=f"ignore {ignore} weight {w is not None}",
                                        tolerance=tolerance_for(dtype)))
    # One sample without a batch dim, a transposed input, uint8 targets.
    compiled_only(lambda: check(F.nll_loss, x[0], t[0], reduction=reduction))
    compiled_only(lambda: check(F.nll_loss, make((7, 13), dtype).t(), t, reduction=reduction,
                                tolerance=tolerance_for(dtype)))
    compiled_only(lambda: check(F.nll_loss, x, t.clamp(min=0).to(torch.uint8), reduction=reduction,
                                tolerance=tolerance_for(dtype)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_empty_batches_and_all_ignored(reduction):
    check(F.nll_loss, make((0, 5), torch.float32), torch.zeros(0, dtype=torch.long), reduction=reduction)
    check(F.nll_loss, make((4, 5), torch.float32), torch.full((4,), -100), reduction=reduction)


def test_out_overload_and_total_weight():
    x, t = make((6, 4), torch.float32), targets((6,), 4)
    weight = make((4,), torch.float32, low=0.5, high=1.5)
    for reduction in range(3):
        check(lambda a, b, w: torch.ops.aten.nll_loss_forward(a, b, w, reduction, -100), x, t, weight)
        check(lambda a, b, w: torch.ops.aten.nll_loss_forward.output(
            a, b, w, reduction, -100, output=torch.empty(0, device=a.device),
            total_weight=torch.empty(0, device=a.device)), x, t, weight)


def test_errors_match_the_cpu():
    x = make((3, 4), torch.float32)
    t = torch.tensor([0, 1, 2])
    check(F.nll_loss, x, t.int(), message="int32 target")
    check(F.nll_loss, x, t.float(), message="float target")
    check(F.nll_loss, x, t[:2], message="size mismatch")
    check(F.nll_loss, x, t, torch.ones(3), message="weight size")
    check(F.nll_loss, x, t, torch.ones(4, dtype=torch.float64), message="weight dtype")
    check(torch.ops.aten.nll_loss_forward, x.long(), t, None, 1, -100, message="integer input")
    check(F.nll_loss, make((2, 3, 4), torch.float32), torch.zeros(2, 4, dtype=torch.long), message="3-D input")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_out_of_range_target_raises_index_error_on_an_idle_stream(reduction):
    x = make((3, 4), torch.float32).to("kiln")
    for bad in (4, -1, 100):
        t = torch.tensor([0, bad, 2]).to("kiln")
        torch.kiln.synchronize()
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
            F.nll_loss(x, t, reduction=reduction)
    # ignore_index is not a class and is not out of bounds.
    F.nll_loss(x, torch.tensor([0, 7, 2]).to("kiln"), ignore_index=7, reduction=reduction).cpu()


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_few_targets_take_one_kernel_and_many_take_three(reduction):
    # Up to 65536 targets: the bound check, total weight and loss are the
    # stages of one row kernel; more: three reductions, split over threads.
    for count, kernels in ((64, 1), (70000, 3)):
        x = make((count, 3), torch.float32)
        t = targets((count,), 3, ignore=-100)
        weight = make((3,), torch.float32, low=0.5, high=1.5)
        x_kiln, t_kiln, weight_kiln = to_kiln(x), to_kiln(t), to_kiln(weight)
        assert kernels_launched(lambda: F.nll_loss(x_kiln, t_kiln, reduction=reduction)) == kernels, count
        for w in (None, weight):
            compiled_only(lambda: check(F.nll_loss, x, t, w, reduction=reduction, message=f"{count} targets"))
        bad = t.clone()
        bad[-1] = 3
        bad_kiln = to_kiln(bad)
        torch.kiln.synchronize()
        # Many targets split over threads leave the stream busy: the check
        # then reports at the next sync.
        with pytest.raises((IndexError, RuntimeError), match="Target 3 is out of bounds."):
            F.nll_loss(x_kiln, bad_kiln, weight_kiln, reduction=reduction)
            torch.kiln.synchronize()


def test_out_of_range_target_on_a_busy_stream_is_reported_at_the_next_sync():
    x = make((3, 4), torch.float32).to("kiln")
    t = torch.tensor([0, 9, 2]).to("kiln")
    torch.kiln.synchronize()
    busy = torch.empty(1 << 22, device="kiln").uniform_()  # queued: the stream is busy
    try:
        loss = F.nll_loss(x, t)
    except IndexError:
        pytest.skip("the stream was idle again before the check")
    with pytest.raises(RuntimeError, match="Target 9 is out of bounds."):
        torch.kiln.synchronize()
    # The loss kernel read nothing out of bounds and produced NaN; the stream works.
    assert torch.isnan(loss.cpu())
    assert busy.sum().item() > 0


def loss_and_grads(fn, x, *args, **keywords):
    leaf = x.detach().clone().requires_grad_()
    loss = fn(leaf, *args, **keywords)
    loss.backward(torch.ones_like(loss))
    return loss.detach(), leaf.grad


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_forward_and_backward(dtype, reduction):
    x = make((16, 10), dtype)
    weight = make((10,), dtype, low=0.1, high=2.0)
    t = targets((16,), 10, ignore=3)
    cases = [dict(), dict(weight=weight), dict(ignore_index=3), dict(weight=weight, ignore_index=3),
             dict(label_smoothing=0.2), dict(weight=weight, label_smoothing=0.1, ignore_index=3)]
    tolerance = tolerance_for(dtype) or (1e-5, 1e-5)
    for case in cases:
        expected = loss_and_grads(F.cross_entropy, x, t, reduction=reduction, **case)
        actual = loss_and_grads(F.cross_entropy, to_kiln(x), to_kiln(t), reduction=reduction, **kiln_case(case))
        assert_same(expected, actual, f"{case}", tolerance)


def kiln_case(case):
    return {key: to_kiln(value) for key, value in case.items()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_spatial_cross_entropy_uses_nll_loss2d(dtype, reduction):
    x = make((2, 5, 3, 4), dtype)
    weight = make((5,), dtype, low=0.1, high=2.0)
    tolerance = tolerance_for(dtype) or (1e-5, 1e-5)
    for ignore, case in [(-100, dict()), (-100, dict(weight=weight)), (2, dict(weight=weight, ignore_index=2))]:
        t = targets((2, 3, 4), 5, ignore=ignore)
        expected = loss_and_grads(F.cross_entropy, x, t, reduction=reduction, **case)
        torch_kiln.clear_op_tracking()
        actual = loss_and_grads(F.cross_entropy, to_kiln(x), to_kiln(t), reduction=reduction, **kiln_case(case))
        executed = torch_kiln.get_executed_ops()
        assert any(name.startswith("aten::nll_loss2d_forward") for name in executed), executed
        assert_same(expected, actual, f"{case}", tolerance)
    # Channels-last input.
    cl = x.contiguous(memory_format=torch.channels_last)
    assert_same(loss_and_grads(F.cross_entropy, cl, t, reduction=reduction),
                loss_and_grads(F.cross_entropy, to_kiln(cl), to_kiln(t), reduction=reduction),
                "channels_last", tolerance)


def test_nll_loss2d_errors():
    x = make((2, 3, 2, 2), torch.float32)
    t = torch.zeros(2, 2, 2, dtype=torch.long)
    nll2d = torch.ops.aten.nll_loss2d_forward
    check(nll2d, x, t.int(), None, 1, -100, message="int32 target")
    check(nll2d, x, t.to(torch.uint8), None, 1, -100, message="uint8 target")
    check(nll2d, x, t[:, :1], None, 1, -100, message="size mismatch")
    check(nll2d, x.long(), t, None, 1, -100, message="integer input")
    x_kiln = x.to("kiln")
    torch.kiln.synchronize()
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        nll2d(x_kiln, torch.full((2, 2, 2), 5).to("kiln"), None, 1, -100)


def test_nll_loss_backward_overloads():
    x, t = make((6, 4), torch.float32), targets((6,), 4, ignore=-100)
    weight = make((4,), torch.float32, low=0.5, high=1.5)
    for reduction in range(3):
        loss, total = torch.ops.aten.nll_loss_forward(x, t, weight, reduction, -100)
        grad = make(tuple(loss.shape), torch.float32)
        check(lambda g, a, b, w, tw: torch.ops.aten.nll_loss_backward(g, a, b, w, reduction, -100, tw),
              grad, x, t, weight, total)
        check(lambda g, a, b, w, tw: torch.ops.aten.nll_loss_backward.grad_input(
            g, a, b, w, reduction, -100, tw, grad_input=torch.empty(0, device=a.device)),
            grad, x, t, weight, total)
