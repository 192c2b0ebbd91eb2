"""AMP's gradient scaler on kiln (torch.amp.GradScaler: fp16 mixed precision
in accelerate and the Trainer): _amp_foreach_non_finite_check_and_unscale_
and _amp_update_scale_ (csrc/kiln/aten/compiled/foreach/grad_scaling.h),
compared with PyTorch's CPU kernels, with no fallback."""
import pytest
import torch

import torch_kiln


def _gradients(device):
    generator = torch.Generator().manual_seed(0)
    gradients = [torch.randn(shape, generator=generator) * 512 for shape in [(4, 3), (7,), (), (0,), (2, 2)]]
    gradients[3] = torch.empty(0)
    gradients.append((torch.randn(5, generator=generator) * 512).to(torch.float16))
    gradients.append((torch.randn(3, generator=generator) * 512).to(torch.bfloat16))
    return [gradient.to(device) for gradient in gradients]


@pytest.mark.parametrize("poison", [None, "inf", "nan", "-inf_in_half"])
@pytest.mark.parametrize("found_before", [0.0, 1.0])
def test_unscale_matches_the_cpu_kernel(poison, found_before):
    results = {}
    for device in ("cpu", "kiln"):
        gradients = _gradients(device)
        if poison == "inf":
            gradients[0][1, 2] = float("inf")
        elif poison == "nan":
            gradients[2].fill_(float("nan"))
        elif poison == "-inf_in_half":
            gradients[5][0] = float("-inf")
        found_inf = torch.full((), found_before, device=device)
        inv_scale = torch.full((), 1 / 512, device=device)
        torch._amp_foreach_non_finite_check_and_unscale_(gradients, found_inf, inv_scale)
        results[device] = ([gradient.cpu() for gradient in gradients], found_inf.item())
    (expected, expected_found), (actual, actual_found) = results["cpu"], results["kiln"]
    assert actual_found == expected_found == (1.0 if poison or found_before else 0.0)
    for want, got in zip(expected, actual):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.parametrize("found_inf, tracker, scale", [
    (0.0, 0, 1024.0), (0.0, 2, 1024.0), (1.0, 2, 1024.0), (1.0, 0, 1.0), (0.0, 2, 3e38)],
    ids=["counts", "grows", "backs_off", "backs_off_small", "growth_would_overflow"])
def test_update_scale_matches_the_cpu_kernel(found_inf, tracker, scale):
    results = {}
    for device in ("cpu", "kiln"):
        current = torch.full((), scale, device=device)
        growth_tracker = torch.full((), tracker, dtype=torch.int32, device=device)
        returned = torch._amp_update_scale_(current, growth_tracker, torch.full((), found_inf, device=device),
                                            2.0, 0.5, 3)
        assert returned.data_ptr() == current.data_ptr()
        results[device] = (current.item(), growth_tracker.item())
    assert results["kiln"] == results["cpu"]


def test_grad_scaler_skips_an_overflowing_step_and_backs_off():
    torch_kiln.clear_op_tracking()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4).to("kiln")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("kiln", init_scale=2.0 ** 40, growth_interval=1)
    inputs = torch.randn(16, 8, device="kiln")
    scales, weights = [], []
    for _ in range(3):
        optimizer.zero_grad()
        with torch.autocast("kiln", dtype=torch.float16):
            loss = model(inputs).float().pow(2).mean() * 1e4
        before = model.weight.detach().clone()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale())
        weights.append(torch.equal(before.cpu(), model.weight.detach().cpu()))
    # 2^40 overflows float16 gradients: the step is skipped and the scale halves.
    assert scales[0] == 2.0 ** 39 and weights[0] is True
    assert any(weight is False for weight in weights[1:]) or scales[-1] < 2.0 ** 39
    assert torch_kiln.get_fallback_ops() == {}


def test_bad_arguments_are_refused():
    gradients = _gradients("kiln")
    with pytest.raises(RuntimeError, match="found_inf must be a float tensor of one element"):
        torch._amp_foreach_non_finite_check_and_unscale_(gradients, torch.zeros(2, device="kiln"),
                                                         torch.ones((), device="kiln"))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch._amp_foreach_non_finite_check_and_unscale_(gradients + [torch.ones(2)], torch.zeros((), device="kiln"),
                                                         torch.ones((), device="kiln"))
    with pytest.raises(RuntimeError, match="growth_tracker must be an int32 tensor"):
        torch._amp_update_scale_(torch.ones((), device="kiln"), torch.zeros((), device="kiln"),
                                 torch.zeros((), device="kiln"), 2.0, 0.5, 3)
