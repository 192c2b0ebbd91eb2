"""torch.profiler sees the kiln device: device activities (kernels, library
calls, copies) on kiln's stream tracks, linked to the host ops that queued
them, with device time in key_averages() and the Chrome trace.
docs/design/profiler.md says how."""
import json

import pytest
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import torch_kiln

DEVICE_ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def small_step(model, inputs, target):
    loss = torch.nn.functional.mse_loss(model(inputs), target)
    loss.backward()
    return loss


@pytest.fixture
def model_and_data():
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).to("kiln")
    inputs = torch.randn(32, 64, device="kiln")
    target = torch.randn(32, 8, device="kiln")
    small_step(model, inputs, target)  # compiles the kernels outside the profile
    torch.kiln.synchronize()
    return model, inputs, target


def profiled_step(model, inputs, target):
    with profile(activities=DEVICE_ACTIVITIES) as prof:
        loss = small_step(model, inputs, target)
        product = inputs @ inputs.T
        host = product.cpu()
    return prof, loss, host


def device_events(prof):
    return [event for event in prof.events() if event.device_type == DeviceType.PrivateUse1]


def test_step_records_kernels_library_calls_and_copies_linked_to_their_ops(model_and_data):
    prof, loss, host = profiled_step(*model_and_data)
    events = device_events(prof)
    assert events, "no device activity recorded"
    host_ops = {event.id: event for event in prof.events() if event.device_type == DeviceType.CPU}
    queuing = {}
    for event in events:
        assert event.time_range.end >= event.time_range.start
        # Each device activity names the op that queued it and links to its host op.
        assert event.linked_correlation_id in host_ops, event.name
        queuing.setdefault(host_ops[event.linked_correlation_id].name, []).append(event)
    assert "aten::mm" in queuing or "aten::addmm" in queuing  # the library path (matmul)
    copies = [event for name in ("aten::copy_", "aten::_copy_from", "aten::_to_copy") for event in queuing.get(name, [])]
    assert any(event.name.startswith("aten::copy_") for event in copies)  # the copy to the CPU
    kernels = [event for name, found in queuing.items() if name not in ("aten::mm", "aten::addmm") for event in found
               if not event.name.startswith("aten::copy_")]
    assert kernels  # Kiln's own kernels (threshold_backward, mse_loss, sums, ...)
    torch.testing.assert_close(host, (model_and_data[1] @ model_and_data[1].T).cpu())


def test_key_averages_shows_device_time_apart_from_host_time(model_and_data):
    prof, _, _ = profiled_step(*model_and_data)
    averages = {average.key: average for average in prof.key_averages()}
    matmul = averages.get("aten::mm") or averages["aten::addmm"]
    assert matmul.device_time_total > 0
    assert matmul.cpu_time_total > 0
    copy_time = sum(averages[name].device_time_total for name in ("aten::_copy_from", "aten::copy_") if name in averages)
    assert copy_time > 0
    assert "KILN" in prof.key_averages().table(sort_by="device_time_total", row_limit=5)


def test_chrome_trace_has_events_on_a_kiln_stream_track(model_and_data, tmp_path):
    prof, _, _ = profiled_step(*model_and_data)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    tracks = {(event["pid"], event["tid"]): event["args"]["name"] for event in events
              if event.get("ph") == "M" and event.get("name") == "thread_name"}
    processes = {event["pid"]: event["args"]["name"] for event in events
                 if event.get("ph") == "M" and event.get("name") == "process_name"}
    device = [event for event in events if event.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert {event["cat"] for event in device} >= {"kernel", "gpu_memcpy"}
    for event in device:
        assert tracks[(event["pid"], event["tid"])].startswith("kiln:0 stream ")
        assert processes[event["pid"]] == "kiln"
        assert event["dur"] >= 0 and event["args"]["device"] == "kiln:0"
    kinds = {event["args"]["kind"] for event in device}
    assert {"kernel", "library", "copy"} <= kinds
    # The host op and its device activity share the correlation id.
    host_ids = {event["args"].get("External id") for event in events if event.get("cat") == "cpu_op"}
    assert all(event["args"]["External id"] in host_ids for event in device)


def test_use_device_argument_of_the_autograd_profiler(model_and_data):
    model, inputs, target = model_and_data
    with torch.autograd.profiler.profile(use_device="kiln", use_kineto=True) as prof:
        inputs @ inputs.T
        torch.kiln.synchronize()
    assert any(event.device_type == DeviceType.PrivateUse1 for event in prof.function_events)


def test_profiler_off_records_nothing(model_and_data):
    model, inputs, target = model_and_data
    with profile(activities=[ProfilerActivity.CPU]) as host_only:
        small_step(model, inputs, target)
        torch.kiln.synchronize()
    assert not device_events(host_only)
    with profile(activities=DEVICE_ACTIVITIES):
        assert torch_kiln._C._device_trace_recording()
    assert not torch_kiln._C._device_trace_recording()
    small_step(model, inputs, target)  # between profiles: nothing is kept
    torch.kiln.synchronize()
    with profile(activities=DEVICE_ACTIVITIES) as empty:
        pass
    assert not device_events(empty)


def test_autograd_profiler_marker_mode_times_the_device(model_and_data):
    """use_device="kiln" without Kineto: device time from events recorded on the
    stream around each op, as CUDA's legacy mode does."""
    model, inputs, target = model_and_data
    with torch.autograd.profiler.profile(use_device="kiln") as prof:
        (inputs @ inputs.T).cpu()
    averages = {average.key: average for average in prof.key_averages()}
    assert averages["aten::mm"].device_time_total > 0


def test_a_collective_is_device_activity(tmp_path):
    import torch.distributed as dist
    dist.init_process_group("kiln", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        tensor = torch.ones(1024, device="kiln")
        with profile(activities=DEVICE_ACTIVITIES) as prof:
            dist.all_reduce(tensor)
            dist.broadcast(tensor, src=0)
            torch.kiln.synchronize()
    finally:
        dist.destroy_process_group()
    collectives = [event for event in device_events(prof) if event.name in ("all_reduce", "broadcast")]
    assert {event.name for event in collectives} == {"all_reduce", "broadcast"}
    host_ops = {event.id: event.name for event in prof.events() if event.device_type == DeviceType.CPU}
    assert all(host_ops.get(event.linked_correlation_id, "").startswith("c10d::") for event in collectives), \
        [(event.name, host_ops.get(event.linked_correlation_id)) for event in collectives]
