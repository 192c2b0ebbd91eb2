#include "kiln/python/distributed_bindings.h"

#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "kiln/distributed/backend.h"

namespace kiln::torch_integration {

namespace py = pybind11;

void bind_distributed(py::module& module) {
  module.def("_register_distributed_types", [module]() mutable {
    if (py::hasattr(module, "_KilnBackend")) return;
    using distributed::KilnBackend;
    py::class_<KilnBackend, c10d::Backend, c10::intrusive_ptr<KilnBackend>>(module, "_KilnBackend")
        .def(py::init([](int rank, int size, std::chrono::milliseconds timeout,
                         c10::intrusive_ptr<c10d::Backend> transport) {
               return c10::make_intrusive<KilnBackend>(rank, size, timeout, std::move(transport));
             }),
             py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("transport"),
             py::call_guard<py::gil_scoped_release>());
  });
}

}  // namespace kiln::torch_integration
