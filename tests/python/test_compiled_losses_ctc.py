"""Compiled _ctc_loss and _ctc_loss_backward (what F.ctc_loss reaches),
differentially against the CPU."""
import pytest
import torch
import torch.nn.functional as F

from differential import check, compiled_only, make


def ctc_case(dtype, concatenated):
    steps, samples, labels = 12, 4, 5
    log_probs = make((steps, samples, labels), dtype).log_softmax(2)
    generator = torch.Generator().manual_seed(3)
    padded = torch.randint(1, labels, (samples, 4), generator=generator)
    padded[1, 1] = padded[1, 0]  # a repeated label: no skip between them
    input_lengths = [12, 9, 0, 7]
    target_lengths = [4, 2, 0, 3]
    if concatenated:
        targets = torch.cat([padded[index, :length] for index, length in enumerate(target_lengths)])
    else:
        targets = padded
    return log_probs, targets, input_lengths, target_lengths


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("concatenated", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_forward_and_backward(dtype, concatenated, reduction, zero_infinity):
    log_probs, targets, input_lengths, target_lengths = ctc_case(dtype, concatenated)

    def forward_backward(lp, t):
        lp = lp.clone().requires_grad_()
        loss = F.ctc_loss(lp, t, input_lengths, target_lengths, reduction=reduction,
                          zero_infinity=zero_infinity)
        loss.backward(torch.ones_like(loss))
        return loss, lp.grad

    compiled_only(lambda: check(forward_backward, log_probs, targets, tolerance=(1e-5, 1e-5)))


def test_ctc_loss_infinite_loss_unbatched_and_int_targets():
    log_probs = make((3, 2, 4), torch.float32).log_softmax(2)
    targets = torch.tensor([[1, 2, 1], [2, 3, 3]])  # 3 labels in 2 steps: an infinite loss

    def forward_backward(lp, t, zero_infinity):
        lp = lp.clone().requires_grad_()
        loss = F.ctc_loss(lp, t, [2, 3], [3, 1], reduction="sum", zero_infinity=zero_infinity)
        loss.backward()
        return loss, lp.grad

    for zero_infinity in (False, True):
        compiled_only(lambda: check(forward_backward, log_probs, targets, zero_infinity,
                                    message=f"zero_infinity={zero_infinity}"))
    compiled_only(lambda: check(F.ctc_loss, log_probs, targets.int(), [3, 2], [1, 1],
                                message="int32 targets"))
    compiled_only(lambda: check(F.ctc_loss, log_probs[:, 0], targets[0, :1], [3], [1],
                                message="unbatched"))


def test_ctc_loss_errors():
    log_probs, targets, input_lengths, target_lengths = ctc_case(torch.float32, False)
    loss = torch.ops.aten._ctc_loss
    check(loss, log_probs, targets, input_lengths, target_lengths, 7, message="blank out of range")
    check(loss, log_probs, targets, input_lengths[:2], target_lengths, message="input lengths size")
    check(loss, log_probs, targets, [13, 1, 1, 1], target_lengths, message="input too long")
    check(loss, log_probs, targets, input_lengths, [5, 1, 1, 1], message="target too long")
    check(loss, log_probs, targets, input_lengths, [-1, 1, 1, 1], message="negative target length")
    check(loss, log_probs.half(), targets, input_lengths, target_lengths, message="half")
    check(loss, log_probs, targets.float(), input_lengths, target_lengths, message="float targets")
    check(loss, log_probs[0], targets, input_lengths, target_lengths, message="2-D log_probs")
