// Bindings of the profiler's pieces: device memory history and snapshots
// (torch.kiln.memory._record_memory_history, _snapshot).
#pragma once

#include <pybind11/pybind11.h>

namespace kiln::torch_integration {

void bind_profiler(pybind11::module& module);

}  // namespace kiln::torch_integration
