"""Acceptance: a device-agnostic training loop (an MLP on synthetic data,
CrossEntropyLoss, SGD and Adam) runs on kiln and matches the CPU run, and op
tracking accounts for every op it ran."""
import os
import sys

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import torch_kiln

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from train_mlp import train  # noqa: E402


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_losses_and_parameters_match_the_cpu(optimizer):
    device = torch.accelerator.current_accelerator()
    assert device.type == "kiln"
    device_losses, device_model = train(device, steps=20, optimizer_name=optimizer)
    cpu_losses, cpu_model = train("cpu", steps=20, optimizer_name=optimizer)
    assert len(device_losses) == 20
    torch.testing.assert_close(torch.tensor(device_losses), torch.tensor(cpu_losses),
                               rtol=1e-5, atol=0)
    for (name, on_device), on_cpu in zip(device_model.named_parameters(), cpu_model.parameters()):
        assert on_device.device.type == "kiln", name
        torch.testing.assert_close(on_device.detach().cpu(), on_cpu.detach(), rtol=1e-5,
                                   atol=1e-6)
        torch.testing.assert_close(on_device.grad.cpu(), on_cpu.grad, rtol=1e-5, atol=1e-6)


class KilnOpRecorder(TorchDispatchMode):
    """Records every ATen op called with a kiln tensor argument."""

    def __init__(self):
        super().__init__()
        self.ops = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat = torch.utils._pytree.tree_leaves((args, kwargs))
        if any(isinstance(value, torch.Tensor) and value.device.type == "kiln" for value in flat) \
                or kwargs.get("device") is not None and torch.device(kwargs["device"]).type == "kiln":
            self.ops.add(func)
        return func(*args, **kwargs)


def tracked_name(op):
    name = op._schema.name
    return name if op._overloadname == "default" else f"{name}.{op._overloadname}"


def test_executed_ops_account_for_every_op_of_the_loop():
    torch_kiln.clear_op_tracking()
    with KilnOpRecorder() as recorder:
        train(torch.accelerator.current_accelerator(), steps=3, optimizer_name="adam")
    executed = torch_kiln.get_executed_ops()
    assert executed, "no op was tracked"
    missing = []
    for op in recorder.ops:
        name = tracked_name(op)
        # An op with a CompositeExplicitAutograd kernel runs that kernel, whose
        # callees reach the device (and are tracked) in its place; a structured
        # op's functional and in-place forms reach it as their out= overload.
        def has_kernel(key):
            return torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
        composite = has_kernel("CompositeExplicitAutograd")
        out_variant = has_kernel("CompositeExplicitAutogradNonFunctional") and any(
            key.startswith(op._schema.name + ".") for key in executed)
        if name not in executed and not composite and not out_variant:
            missing.append(name)
    assert not missing, f"ops that ran on kiln but were not tracked: {sorted(missing)}"
    fallback = torch_kiln.get_fallback_ops()
    assert set(fallback) <= set(executed)
    assert all(count > 0 for count in fallback.values())
