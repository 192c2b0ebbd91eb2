"""Acceptance of torch.compile(backend="kiln"): the three reference models
train compiled (forward and backward graphs) and match eager's losses and
gradients; their inference matches too; code outside the compiled region
(loss, optimizer) keeps running eagerly."""
import pytest
import torch

import torch_kiln
from torch_kiln.models import MODELS, Training, train_steps

# As test_reference_models: float32 training drifts slowly over steps.
TOLERANCE = {"mlp": 1e-4, "cnn": 1e-3, "transformer": 1e-3}


def compiled_model(spec):
    torch.manual_seed(0)
    return torch.compile(spec.make_model().to("kiln"), backend="kiln")


pytestmark = pytest.mark.usefixtures("fresh_compile_state")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_trains_compiled_like_eager(name):
    spec = MODELS[name]
    eager_losses, eager_model = train_steps(spec, "kiln", steps=5)
    cpu_losses, _ = train_steps(spec, "cpu", steps=5)
    torch_kiln.clear_op_tracking()
    torch_kiln.reset_compile_stats()
    compiled_losses, model = train_steps(spec, "kiln", steps=5, model=compiled_model(spec))
    stats = torch_kiln.compile_stats()
    assert stats["graphs"] == 2, stats  # one forward and one backward graph
    assert stats["cpp_runtime_graphs"] == 1, stats  # steps after the first skip AOTAutograd's Python
    assert stats["kernels"] > 0 and stats["fused_nodes"] > stats["kernels"], stats
    assert torch_kiln.get_fallback_ops() == {}
    tolerance = TOLERANCE[name]
    torch.testing.assert_close(torch.tensor(compiled_losses), torch.tensor(eager_losses), rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(torch.tensor(compiled_losses), torch.tensor(cpu_losses), rtol=tolerance, atol=tolerance)
    for (parameter_name, compiled), eager in zip(model.named_parameters(), eager_model.parameters()):
        torch.testing.assert_close(compiled.detach().cpu(), eager.detach().cpu(), rtol=tolerance * 10,
                                   atol=tolerance * 10, msg=lambda message: f"{parameter_name}: {message}")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gradients_match_eager(name):
    spec = MODELS[name]
    inputs, targets = spec.make_batch(torch.Generator().manual_seed(1))
    gradients = {}
    for mode in ("eager", "compiled"):
        torch.manual_seed(0)
        model = spec.make_model().to("kiln")
        runner = torch.compile(model, backend="kiln") if mode == "compiled" else model
        loss = spec.loss(runner(inputs.to("kiln")), targets.to("kiln"))
        loss.backward()
        gradients[mode] = [parameter.grad.cpu() for parameter in model.parameters()]
    for compiled, eager in zip(gradients["compiled"], gradients["eager"]):
        torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_inference_matches_eager_and_cpu(name):
    spec = MODELS[name]
    inputs, _ = spec.make_batch(torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    model = spec.make_model().eval()
    with torch.no_grad():
        expected = model(inputs)
        model.to("kiln")
        eager = model(inputs.to("kiln")).cpu()
        compiled = torch.compile(model, backend="kiln")(inputs.to("kiln")).cpu()
    torch.testing.assert_close(compiled, eager, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(compiled, expected, rtol=1e-4, atol=1e-4)


def test_batch_norm_running_statistics_update_like_eager():
    spec = MODELS["cnn"]
    inputs, _ = spec.make_batch(torch.Generator().manual_seed(1))
    statistics = {}
    for mode in ("eager", "compiled"):
        torch.manual_seed(0)
        model = spec.make_model().to("kiln")
        runner = torch.compile(model, backend="kiln") if mode == "compiled" else model
        runner(inputs.to("kiln"))
        statistics[mode] = [buffer.cpu() for buffer in model.buffers()]
    for compiled, eager in zip(statistics["compiled"], statistics["eager"]):
        torch.testing.assert_close(compiled, eager)
