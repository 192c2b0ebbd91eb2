"""torch.save / torch.load of kiln tensors, state_dicts and optimizer state."""
import io

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
