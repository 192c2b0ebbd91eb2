"""torch.optim.Adam/AdamW(fused=True) on kiln (aten::_fused_adam_ and
_fused_adamw_, csrc/kiln/aten/compiled/foreach/fused_optimizers.h): what
Hugging Face's Trainer uses by default. Each step is compared with PyTorch's
CPU fused kernel, and none may fall back to the CPU."""
import pytest
import torch

import torch_kiln

SHAPES = [(5, 3), (7,), (2, 3, 4), ()]


def _parameters(device, dtype=torch.float32):
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(shape, generator=generator, dtype=torch.float32).to(device=device, dtype=dtype)
            .requires_grad_() for shape in SHAPES]


def _train(device, optimizer_class, steps=4, dtype=torch.float32, **options):
    parameters = _parameters(device, dtype)
    if isinstance(options.get("lr"), torch.Tensor):
        options["lr"] = options["lr"].to(device if options.pop("lr_on_device", False) else "cpu")
    optimizer = optimizer_class(parameters, fused=True, **options)
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        for parameter in parameters:
            parameter.grad = torch.randn(parameter.shape, generator=generator).to(device=device, dtype=dtype)
        optimizer.step()
    return [parameter.detach().cpu() for parameter in parameters], optimizer


@pytest.mark.parametrize("optimizer_class", [torch.optim.Adam, torch.optim.AdamW])
@pytest.mark.parametrize("options", [
    {},
    {"weight_decay": 0.1, "amsgrad": True},
    {"maximize": True, "weight_decay": 0.05, "betas": (0.8, 0.95)},
    {"lr": torch.tensor(0.01)},
    {"lr": torch.tensor(0.02), "lr_on_device": True, "weight_decay": 0.1},
], ids=["defaults", "amsgrad", "maximize", "cpu_lr_tensor", "device_lr_tensor"])
def test_fused_adam_matches_the_cpu_kernel(optimizer_class, options):
    torch_kiln.clear_op_tracking()
    expected, _ = _train("cpu", optimizer_class, **dict(options))
    actual, optimizer = _train("kiln", optimizer_class, **dict(options))
    for want, got in zip(expected, actual):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    state = optimizer.state[optimizer.param_groups[0]["params"][0]]
    assert state["step"].device.type == "kiln" and state["step"].item() == 4
    assert torch_kiln.get_fallback_ops() == {}
    name = "aten::_fused_adamw_" if optimizer_class is torch.optim.AdamW else "aten::_fused_adam_"
    executed = torch_kiln.get_executed_ops()
    assert any(op.startswith(name) and paths.get("native") for op, paths in executed.items()), executed


def test_fused_adamw_in_bfloat16_follows_the_cpu_kernel():
    # The CPU kernel computes BFloat16 in float; Kiln's ops round each step in BFloat16.
    expected, _ = _train("cpu", torch.optim.AdamW, dtype=torch.bfloat16, weight_decay=0.1)
    actual, _ = _train("kiln", torch.optim.AdamW, dtype=torch.bfloat16, weight_decay=0.1)
    for want, got in zip(expected, actual):
        assert got.dtype == torch.bfloat16
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)


def _direct_call_arguments(device, found_inf):
    generator = torch.Generator().manual_seed(2)

    def draw(scale=1.0):
        return [(torch.randn(shape, generator=generator) * scale).to(device) for shape in SHAPES]

    params, grads, exp_avgs, exp_avg_sqs = draw(), draw(1024.0), draw(0.1), [t.abs() for t in draw(0.01)]
    steps = [torch.tensor(3.0, device=device) for _ in SHAPES]
    options = dict(lr=0.01, beta1=0.9, beta2=0.999, weight_decay=0.1, eps=1e-8, amsgrad=False, maximize=False,
                   grad_scale=torch.tensor(1024.0, device=device),
                   found_inf=torch.tensor(float(found_inf), device=device))
    return (params, grads, exp_avgs, exp_avg_sqs, [], steps), options


@pytest.mark.parametrize("found_inf", [0, 1])
def test_grad_scale_and_found_inf_as_amp_passes_them(found_inf):
    """GradScaler's arguments: grads are unscaled in place; a step with found_inf == 1 changes nothing."""
    lists_cpu, options_cpu = _direct_call_arguments("cpu", found_inf)
    lists_kiln, options_kiln = _direct_call_arguments("kiln", found_inf)
    before = [[t.clone() for t in group] for group in lists_cpu]
    torch._fused_adamw_(*lists_cpu, **options_cpu)
    torch._fused_adamw_(*lists_kiln, **options_kiln)
    for group_cpu, group_kiln in zip(lists_cpu, lists_kiln):
        for want, got in zip(group_cpu, group_kiln):
            torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-6)
    changed = any(not torch.equal(old, new) for old, new in zip(before[0], lists_cpu[0]))
    assert changed == (found_inf == 0)


def test_bad_arguments_are_refused_before_anything_changes():
    (params, grads, exp_avgs, exp_avg_sqs, _, steps), options = _direct_call_arguments("kiln", 0)
    originals = [[t.cpu() for t in group] for group in (params, grads, exp_avgs, exp_avg_sqs)]
    with pytest.raises(RuntimeError, match=r"_fused_adamw_: expected exp_avgs to hold 4 tensors .* holds 3"):
        torch._fused_adamw_(params, grads, exp_avgs[:3], exp_avg_sqs, [], steps, **options)
    mixed = grads[:3] + [grads[3].cpu()]
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*kiln:0 and cpu"):
        torch._fused_adamw_(params, mixed, exp_avgs, exp_avg_sqs, [], steps, **options)
    with pytest.raises(RuntimeError, match=r"expected max_exp_avg_sqs to hold 4 tensors"):
        torch._fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, [], steps, **dict(options, amsgrad=True))
    wrong_shape = exp_avgs[:3] + [torch.zeros(5, device="kiln")]
    with pytest.raises(RuntimeError, match=r"parameter 3 has shape \[\] but its gradient or state has shape \[5\]"):
        torch._fused_adamw_(params, grads, wrong_shape, exp_avg_sqs, [], steps, **options)
    for group, original in zip((params, grads, exp_avgs, exp_avg_sqs), originals):
        for tensor, saved in zip(group, original):
            assert torch.equal(tensor.cpu(), saved)
