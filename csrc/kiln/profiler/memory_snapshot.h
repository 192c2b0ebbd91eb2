// Memory history and snapshots of kiln devices, in torch.cuda.memory's
// format (torch.kiln.memory._record_memory_history(), _snapshot()), which
// PyTorch's memory visualizer (torch/cuda/_memory_viz.py,
// pytorch.org/memory_viz) reads.
//
// The allocator records (runtime/memory_history.h); this layer chooses what it
// records, gathers stacks with PyTorch's CapturedTraceback (Python frames, and
// C++ frames for stacks="all"), and builds the snapshot's dictionaries,
// symbolizing the stacks. Called with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>

namespace kiln::torch_integration {

// As torch.cuda.memory._record_memory_history: `enabled` None (stop), "state"
// (contexts of live blocks) or "all" (also the history of actions); `context`
// None, "state", "alloc" or "all"; `stacks` "python" or "all". Applies to
// every kiln device. Raises ValueError naming a bad argument.
void record_memory_history(const std::optional<std::string>& enabled, const std::optional<std::string>& context,
                           const std::string& stacks, size_t max_entries, bool clear_history);

// {"segments": [...], "device_traces": [[...] per device]} with torch.cuda's keys.
pybind11::dict memory_snapshot();

}  // namespace kiln::torch_integration
