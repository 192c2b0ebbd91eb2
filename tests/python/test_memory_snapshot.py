"""Memory history and snapshots of the kiln caching allocator in
torch.cuda.memory's format (torch.kiln.memory._record_memory_history,
_snapshot, _dump_snapshot), read by PyTorch's memory visualizer."""
import pickle

import pytest
import torch
from torch.cuda import _memory_viz

memory = torch.kiln.memory


@pytest.fixture(autouse=True)
def history_off_afterwards():
    torch.kiln.synchronize()
    yield
    memory._record_memory_history(None, clear_history=True)


def trace_of(snapshot):
    return snapshot["device_traces"][0]


def test_allocations_and_frees_are_recorded_with_sizes_and_python_frames():
    memory._record_memory_history("all", stacks="python", clear_history=True)
    tensor = torch.empty(3, 512, device="kiln")  # 6144 bytes, a multiple of the 512-byte rounding
    address = tensor.data_ptr()
    del tensor
    torch.kiln.synchronize()
    actions = [entry for entry in trace_of(memory._snapshot()) if entry["addr"] == address]
    kinds = [entry["action"] for entry in actions]
    assert kinds[-3:] == ["alloc", "free_requested", "free_completed"]
    assert all(entry["size"] == 6144 for entry in actions[-3:])
    assert all(entry["stream"] == torch.kiln.current_stream().stream_id for entry in actions[-3:])
    alloc = actions[-3]
    assert alloc["time_us"] > 0
    assert any(frame["filename"] == __file__ and frame["name"].startswith("test_allocations")
               for frame in alloc["frames"])
    # Rounded: 1000 bytes take a 1024-byte block.
    odd = torch.empty(250, device="kiln")
    entry = [e for e in trace_of(memory._snapshot()) if e["action"] == "alloc" and e["addr"] == odd.data_ptr()][-1]
    assert entry["size"] == 1024


def test_segments_add_up_to_reserved_memory_and_blocks_describe_live_tensors():
    memory._record_memory_history("all", clear_history=True)
    small = torch.randn(100, device="kiln")
    large = torch.randn(3 << 20, device="kiln")  # 12 MiB: the large pool
    torch.kiln.synchronize()
    snapshot = memory._snapshot()
    segments = snapshot["segments"]
    assert sum(segment["total_size"] for segment in segments) == memory.memory_reserved()
    blocks = {block["address"]: block for segment in segments for block in segment["blocks"]}
    for segment in segments:
        assert sum(block["size"] for block in segment["blocks"]) == segment["total_size"]
        assert segment["allocated_size"] == sum(block["size"] for block in segment["blocks"]
                                                if block["state"] == "active_allocated")
        assert segment["segment_type"] in ("small", "large")
    assert sum(segment["allocated_size"] for segment in segments) == memory.memory_allocated()
    for tensor in (small, large):
        block = blocks[tensor.data_ptr()]
        assert block["state"] == "active_allocated"
        assert block["requested_size"] == tensor.nbytes
        assert block["frames"], "a live block keeps the stack of its allocation"
    large_segment = next(s for s in segments if s["address"] <= large.data_ptr() < s["address"] + s["total_size"])
    assert large_segment["segment_type"] == "large"
    assert any(entry["action"] == "segment_alloc" for entry in trace_of(snapshot))
    del large, tensor
    memory.empty_cache()
    assert any(entry["action"] == "segment_free" for entry in trace_of(memory._snapshot()))


def test_recording_off_stops_recording_and_state_keeps_no_actions():
    memory._record_memory_history("all", clear_history=True)
    torch.empty(128, device="kiln")
    recorded = len(trace_of(memory._snapshot()))
    assert recorded >= 2
    memory._record_memory_history(None)
    torch.empty(128, device="kiln")
    torch.kiln.synchronize()
    assert len(trace_of(memory._snapshot())) == recorded  # kept, not extended
    memory._record_memory_history("state", clear_history=True)  # context "all" keeps block stacks
    live = torch.empty(128, device="kiln")
    snapshot = memory._snapshot()
    assert trace_of(snapshot) == []
    block = next(b for s in snapshot["segments"] for b in s["blocks"] if b["address"] == live.data_ptr())
    assert block["frames"]


def test_max_entries_keeps_the_newest_actions():
    memory._record_memory_history("all", context=None, max_entries=4, clear_history=True)
    addresses = []
    for _ in range(5):
        tensor = torch.empty(256, device="kiln")
        addresses.append(tensor.data_ptr())
        del tensor
    trace = trace_of(memory._snapshot())
    assert len(trace) == 4
    assert trace[-1]["action"] == "free_completed" and all(entry["frames"] == [] for entry in trace)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="enabled must be"):
        memory._record_memory_history("sometimes")
    with pytest.raises(ValueError, match="context must be"):
        memory._record_memory_history("all", context="everything")
    with pytest.raises(ValueError, match="stacks must be"):
        memory._record_memory_history("all", stacks="cpp")
    with pytest.raises(ValueError, match="max_entries"):
        memory._record_memory_history("all", max_entries=0)


def test_pytorch_memory_visualizer_reads_a_kiln_snapshot(tmp_path):
    memory._record_memory_history("all", clear_history=True)
    model = torch.nn.Linear(32, 16).to("kiln")
    model(torch.randn(8, 32, device="kiln")).sum().backward()
    torch.kiln.synchronize()
    path = tmp_path / "snapshot.pickle"
    memory._dump_snapshot(str(path))
    snapshot = pickle.loads(path.read_bytes())
    assert set(snapshot) >= {"segments", "device_traces"}
    text = _memory_viz.trace(snapshot)
    # Its allocations and frees, replayed: in a segment that existed before recording began
    # (" = seg_...") or in one allocated while it was on (" = cudaMalloc(", as the viz names it).
    assert (" = seg_" in text or " = cudaMalloc(" in text) and "\ndel " in text
    assert _memory_viz.segsum(snapshot).startswith("Summary")
    for flamegraph in (_memory_viz.segments, _memory_viz.memory):
        assert flamegraph(snapshot, format_flamegraph=lambda lines: lines)
    assert "<html" in _memory_viz.trace_plot(snapshot).lower()
    assert "<html" in _memory_viz.segment_plot(snapshot).lower()


def test_memory_visualizer_plots_a_profile_of_kiln_memory():
    from torch.profiler import ProfilerActivity, profile
    model = torch.nn.Linear(32, 16).to("kiln")
    inputs = torch.randn(8, 32, device="kiln")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], profile_memory=True,
                 record_shapes=True, with_stack=True) as prof:
        model(inputs).sum().backward()
        torch.kiln.synchronize()
    assert "<html" in _memory_viz.profile_plot(prof).lower()
