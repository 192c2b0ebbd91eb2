#include "kiln/python/profiler_bindings.h"

#include <torch/csrc/utils/pybind.h>

#include "kiln/profiler/memory_snapshot.h"
#include "kiln/runtime/device_trace.h"

namespace kiln::torch_integration {

void bind_profiler(pybind11::module& module) {
  namespace py = pybind11;
  module.def("_record_memory_history", &record_memory_history, py::arg("enabled"), py::arg("context"),
             py::arg("stacks"), py::arg("max_entries"), py::arg("clear_history"));
  module.def("_memory_snapshot", &memory_snapshot);
  // Whether a profiler is recording the device's activity (tests, bench).
  module.def("_device_trace_recording", [] { return device_trace::recording(); });
}

}  // namespace kiln::torch_integration
