#include "kiln/python/distributed_bindings.h"

#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "kiln/c10/status_error.h"
#include "kiln/distributed/backend.h"

namespace kiln::torch_integration {

namespace py = pybind11;

void bind_distributed(py::module& module) {
  module.def("_register_distributed_types", [module]() mutable {
    if (py::hasattr(module, "_KilnBackend")) return;
    using distributed::KilnBackend;
    // A group's shared-memory segment (runtime/shared_memory_group.h), set
    // up by torch_kiln.distributed: rank 0 creates it, the others open it.
    py::class_<SharedMemoryGroup, std::shared_ptr<SharedMemoryGroup>>(module, "_SharedMemoryGroup")
        .def_static("create", [](const std::string& name, int size) {
          return std::shared_ptr<SharedMemoryGroup>(
              value_or_throw(SharedMemoryGroup::create(name, size, SharedMemoryGroup::kDefaultSlotBytes)));
        })
        .def_static("open", [](const std::string& name, int rank, int size) {
          return std::shared_ptr<SharedMemoryGroup>(value_or_throw(SharedMemoryGroup::open(name, rank, size)));
        })
        .def_static("unlink", [](const std::string& name) { check_status(SharedMemoryGroup::unlink(name)); });
    py::class_<KilnBackend, c10d::Backend, c10::intrusive_ptr<KilnBackend>>(module, "_KilnBackend")
        .def(py::init([](int rank, int size, std::chrono::milliseconds timeout,
                         c10::intrusive_ptr<c10d::Backend> transport,
                         std::shared_ptr<SharedMemoryGroup> shared_memory) {
               return c10::make_intrusive<KilnBackend>(rank, size, timeout, std::move(transport),
                                                       std::move(shared_memory));
             }),
             py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("transport"),
             py::arg("shared_memory") = nullptr, py::call_guard<py::gil_scoped_release>())
        .def_property_readonly("uses_shared_memory", &KilnBackend::uses_shared_memory);
  });
}

}  // namespace kiln::torch_integration
