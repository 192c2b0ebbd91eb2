#include "kiln/profiler/memory_snapshot.h"

#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/csrc/utils/pybind.h>

#include <mutex>
#include <unordered_map>
#include <vector>

#include "kiln/c10/status_error.h"
#include "kiln/runtime/runtime.h"

namespace torch {
// Declared in torch/csrc/profiler/python/combined_traceback.h, which includes
// nlohmann/json.hpp, a header PyTorch's wheel does not ship; libtorch_python
// exports it. It lets CapturedTraceback gather Python frames.
void installCapturedTracebackPython();
}  // namespace torch

namespace kiln::torch_integration {
namespace py = pybind11;
namespace {

MemoryContext gather_python_frames() { return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/false); }
MemoryContext gather_all_frames() { return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/true); }

const char* action_name(MemoryAction::Kind kind) {
  switch (kind) {
    case MemoryAction::kAlloc: return "alloc";
    case MemoryAction::kFreeRequested: return "free_requested";
    case MemoryAction::kFreeCompleted: return "free_completed";
    case MemoryAction::kSegmentAlloc: return "segment_alloc";
    case MemoryAction::kSegmentFree: return "segment_free";
    case MemoryAction::kOutOfMemory: return "oom";
  }
  return "unknown";
}

const char* state_name(CachingAllocator::BlockSnapshot::State state) {
  switch (state) {
    case CachingAllocator::BlockSnapshot::kActiveAllocated: return "active_allocated";
    case CachingAllocator::BlockSnapshot::kActivePendingFree: return "active_pending_free";
    case CachingAllocator::BlockSnapshot::kInactive: return "inactive";
  }
  return "unknown";
}

// Symbolizes every distinct stack once (a stack may be shared by a block and
// its alloc action), then hands out each one's list of frames.
class Frames {
 public:
  void add(const MemoryContext& context) {
    if (context != nullptr && index_.emplace(context.get(), tracebacks_.size()).second) {
      tracebacks_.push_back(static_cast<torch::CapturedTraceback*>(context.get()));
    }
  }
  // Frames as torch.cuda's snapshots give them: dicts of filename, line and
  // name, innermost first.
  void symbolize() {
    torch::SymbolizedTracebacks symbolized = torch::symbolize(tracebacks_);
    std::vector<py::dict> frames;
    frames.reserve(symbolized.all_frames.size());
    for (const torch::unwind::Frame& frame : symbolized.all_frames) {
      py::dict entry;
      entry["filename"] = frame.filename;
      entry["line"] = frame.lineno;
      entry["name"] = frame.funcname;
      frames.push_back(std::move(entry));
    }
    for (const std::vector<uint64_t>& traceback : symbolized.tracebacks) {
      py::list list;
      for (uint64_t index : traceback) list.append(frames.at(index));
      symbolized_.push_back(std::move(list));
    }
  }
  py::list of(const MemoryContext& context) const {
    if (context == nullptr) return py::list();
    return symbolized_.at(index_.at(context.get()));
  }

 private:
  std::unordered_map<const void*, size_t> index_;
  std::vector<torch::CapturedTraceback*> tracebacks_;
  std::vector<py::list> symbolized_;
};

}  // namespace

void record_memory_history(const std::optional<std::string>& enabled, const std::optional<std::string>& context,
                           const std::string& stacks, size_t max_entries, bool clear_history) {
  if (enabled.has_value() && *enabled != "state" && *enabled != "all") {
    throw py::value_error("_record_memory_history: enabled must be None, 'state' or 'all', got '" + *enabled + "'");
  }
  if (context.has_value() && *context != "state" && *context != "alloc" && *context != "all") {
    throw py::value_error("_record_memory_history: context must be None, 'state', 'alloc' or 'all', got '" +
                          *context + "'");
  }
  if (stacks != "python" && stacks != "all") {
    throw py::value_error("_record_memory_history: stacks must be 'python' or 'all', got '" + stacks + "'");
  }
  Runtime& kiln = runtime();
  if (!enabled.has_value()) {
    for (int device = 0; device < kiln.device_count(); ++device) {
      kiln.allocator(device).disable_history();
      if (clear_history) kiln.allocator(device).clear_history();
    }
    return;
  }
  MemoryHistoryOptions options;
  // "state" keeps no actions, so only the live blocks' stacks matter then.
  options.record_actions = *enabled == "all";
  options.context_for_blocks = context.has_value();
  options.context_for_allocs = context.has_value() && (*context == "alloc" || *context == "all");
  options.context_for_frees = context.has_value() && *context == "all";
  options.max_entries = max_entries;
  if (context.has_value()) {
    static std::once_flag python_unwinder;
    std::call_once(python_unwinder, [] { torch::installCapturedTracebackPython(); });
    options.gatherer = stacks == "all" ? &gather_all_frames : &gather_python_frames;
  }
  for (int device = 0; device < kiln.device_count(); ++device) {
    if (clear_history) kiln.allocator(device).clear_history();
    kiln.allocator(device).enable_history(options);
  }
}

py::dict memory_snapshot() {
  Runtime& kiln = runtime();
  std::vector<std::vector<CachingAllocator::SegmentSnapshot>> segments_by_device;
  std::vector<std::vector<MemoryAction>> actions_by_device;
  {
    // The allocators' locks are never held while waiting for the GIL, but
    // a stream worker freeing memory may be waiting for one of them.
    py::gil_scoped_release no_gil;
    for (int device = 0; device < kiln.device_count(); ++device) {
      segments_by_device.push_back(kiln.allocator(device).snapshot());
      actions_by_device.push_back(kiln.allocator(device).history());
    }
  }
  Frames frames;
  for (const auto& segments : segments_by_device) {
    for (const auto& segment : segments) {
      for (const auto& block : segment.blocks) frames.add(block.context);
    }
  }
  for (const auto& actions : actions_by_device) {
    for (const MemoryAction& action : actions) frames.add(action.context);
  }
  frames.symbolize();

  py::list segments;
  for (size_t device = 0; device < segments_by_device.size(); ++device) {
    for (const auto& segment : segments_by_device[device]) {
      py::dict entry;
      entry["device"] = device;
      entry["address"] = segment.address;
      entry["total_size"] = segment.total_size;
      entry["allocated_size"] = segment.allocated;
      entry["active_size"] = segment.active;
      entry["requested_size"] = segment.requested;
      entry["stream"] = segment.stream;
      entry["segment_type"] = segment.small ? "small" : "large";
      entry["segment_pool_id"] = py::make_tuple(0, 0);
      entry["is_expandable"] = false;
      entry["frames"] = py::list();
      py::list blocks;
      for (const auto& block : segment.blocks) {
        py::dict item;
        item["address"] = block.address;
        item["size"] = block.size;
        item["requested_size"] = block.requested;
        item["state"] = state_name(block.state);
        item["frames"] = frames.of(block.context);
        blocks.append(item);
      }
      entry["blocks"] = blocks;
      segments.append(entry);
    }
  }
  py::list device_traces;
  for (const auto& actions : actions_by_device) {
    py::list trace;
    for (const MemoryAction& action : actions) {
      py::dict item;
      item["action"] = action_name(action.kind);
      item["addr"] = action.address;
      item["size"] = action.size;
      item["stream"] = action.stream;
      item["time_us"] = action.time_us;
      item["frames"] = frames.of(action.context);
      if (action.kind == MemoryAction::kOutOfMemory) item["device_free"] = action.device_free;
      trace.append(item);
    }
    device_traces.append(trace);
  }
  py::dict snapshot;
  snapshot["segments"] = segments;
  snapshot["device_traces"] = device_traces;
  return snapshot;
}

}  // namespace kiln::torch_integration
