"""Acceptance: the three reference models train on kiln for ten steps with no
op leaving the device, and their losses match the CPU run."""
import pytest
import torch

import torch_kiln
from torch_kiln.models import MODELS, train_steps

# Float32 training drifts apart slowly over steps (different summation orders
# in reductions and matmuls); ten steps stay within this.
TOLERANCE = {"mlp": 1e-4, "cnn": 1e-3, "transformer": 1e-3}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_trains_on_device_like_the_cpu(name):
    spec = MODELS[name]
    cpu_losses, cpu_model = train_steps(spec, "cpu", steps=10)
    torch_kiln.clear_op_tracking()
    kiln_losses, kiln_model = train_steps(spec, "kiln", steps=10)
    assert torch_kiln.get_fallback_ops() == {}, torch_kiln.get_fallback_ops()
    torch.testing.assert_close(torch.tensor(kiln_losses), torch.tensor(cpu_losses),
                               rtol=TOLERANCE[name], atol=TOLERANCE[name])
    for (parameter_name, on_kiln), on_cpu in zip(kiln_model.named_parameters(),
                                                 cpu_model.parameters()):
        torch.testing.assert_close(on_kiln.detach().cpu(), on_cpu.detach(),
                                   rtol=TOLERANCE[name] * 10, atol=TOLERANCE[name] * 10,
                                   msg=lambda message: f"{parameter_name}: {message}")
