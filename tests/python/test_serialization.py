"""torch.save / torch.load of kiln tensors, state_dicts and optimizer state:
with weights_only=True (the default), on a machine without Kiln through
map_location="cpu", and PyTorch's own errors for damaged checkpoints."""
import io
import os
import pickle
import subprocess
import sys
import textwrap

import pytest
import torch


def round_trip(obj, **load_arguments):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, **load_arguments)


def test_tensor_round_trip_stays_on_kiln():
    tensor = torch.randn(3, 4, device="kiln")
    loaded = round_trip(tensor)
    assert loaded.device == tensor.device
    assert torch.equal(loaded.cpu(), tensor.cpu())


def test_views_keep_sharing_storage():
    base = torch.arange(10.0, device="kiln")
    loaded_base, loaded_view = round_trip([base, base[2:5]])
    loaded_view.fill_(0)
    assert torch.equal(loaded_base.cpu()[2:5], torch.zeros(3))


def test_map_location():
    tensor = torch.randn(5, device="kiln")
    on_cpu = round_trip(tensor, map_location="cpu")
    assert on_cpu.device.type == "cpu" and torch.equal(on_cpu, tensor.cpu())
    cpu_tensor = torch.randn(5)
    on_kiln = round_trip(cpu_tensor, map_location="kiln")
    assert on_kiln.device.type == "kiln" and torch.equal(on_kiln.cpu(), cpu_tensor)


def test_model_and_optimizer_state():
    model = torch.nn.Linear(4, 3).to("kiln")
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(2, 4, device="kiln")).sum().backward()
    optimizer.step()
    state = round_trip({"model": model.state_dict(), "optimizer": optimizer.state_dict()})
    for name, value in model.state_dict().items():
        assert state["model"][name].device.type == "kiln"
        assert torch.equal(state["model"][name].cpu(), value.cpu())
    restored_model = torch.nn.Linear(4, 3).to("kiln")
    restored_model.load_state_dict(state["model"])
    restored_optimizer = torch.optim.Adam(restored_model.parameters())
    restored_optimizer.load_state_dict(state["optimizer"])
    moments = restored_optimizer.state_dict()["state"][0]["exp_avg"]
    assert moments.device.type == "kiln"
    assert torch.equal(moments.cpu(), optimizer.state_dict()["state"][0]["exp_avg"].cpu())
    cpu_state = round_trip(model.state_dict(), map_location="cpu")
    assert all(value.device.type == "cpu" for value in cpu_state.values())


def checkpoint_bytes():
    model = torch.nn.Linear(4, 3).to("kiln")
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 4, device="kiln")).sum().backward()
    optimizer.step()
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 1}, buffer)
    return buffer.getvalue(), model


def test_weights_only_loading_keeps_kiln_tensors_on_kiln():
    data, model = checkpoint_bytes()
    for arguments in ({}, {"weights_only": True}):  # True is the default
        state = torch.load(io.BytesIO(data), **arguments)
        assert state["model"]["weight"].device.type == "kiln"
        assert state["optimizer"]["state"][0]["exp_avg"].device.type == "kiln"
        assert torch.equal(state["model"]["weight"].cpu(), model.weight.detach().cpu())


class NotAWeight:
    pass


def test_weights_only_refuses_other_objects_beside_kiln_tensors():
    buffer = io.BytesIO()
    torch.save({"weight": torch.ones(2, device="kiln"), "extra": NotAWeight()}, buffer)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(io.BytesIO(buffer.getvalue()))


def test_a_kiln_checkpoint_loads_without_kiln_through_map_location(tmp_path):
    data, model = checkpoint_bytes()
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(data)
    code = f"""
    import sys
    sys.modules["torch_kiln"] = None  # as on a machine without Kiln
    import torch
    state = torch.load({str(path)!r}, map_location="cpu")
    assert state["model"]["weight"].device.type == "cpu"
    assert state["optimizer"]["state"][0]["exp_avg"].device.type == "cpu"
    print(state["model"]["weight"].flatten().tolist())
    try:
        torch.load({str(path)!r})
    except RuntimeError as error:
        print("without map_location:", error)
    """
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    weights, error = run.stdout.strip().splitlines()[-2:]
    assert weights == str(model.weight.detach().cpu().flatten().tolist())
    assert "don't know how to restore data location" in error and "kiln:0" in error


@pytest.mark.parametrize("kept", [0.5, 0.98])
def test_a_truncated_checkpoint_gives_pytorchs_error(kept):
    data, _ = checkpoint_bytes()
    cut = data[:int(len(data) * kept)]
    with pytest.raises(RuntimeError) as on_kiln:
        torch.load(io.BytesIO(cut))
    with pytest.raises(RuntimeError) as on_cpu:
        torch.load(io.BytesIO(cut), map_location="cpu")
    assert "PytorchStreamReader failed" in str(on_kiln.value)
    assert str(on_kiln.value) == str(on_cpu.value)
