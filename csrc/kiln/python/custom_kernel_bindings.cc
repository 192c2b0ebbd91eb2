#include "kiln/python/custom_kernel_bindings.h"

#include <torch/csrc/utils/pybind.h>

#include "kiln/aten/custom/custom_kernel.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration {

namespace py = pybind11;

void bind_custom_kernels(py::module& module) {
  module.def("_custom_kernel_load",
             [](const std::string& name, const std::string& entry, const std::string& source,
                const std::string& file, int64_t line) {
               return custom::load_custom_kernel(name, entry, source, {file, line});
             });
  // A kernel-language kernel's run (torch_kiln.kernels.kernel), counted as a launch.
  module.def("_record_custom_op", [](const std::string& name) { record_op(name, OpPath::kCustom); });
  module.def("_custom_kernel_translation_unit", [](const std::string& source, const std::string& file, int64_t line) {
    return custom::custom_kernel_translation_unit(source, {file, line});
  });
  module.def("_custom_kernel_launch",
             [](int64_t handle, std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs,
                std::vector<int64_t> shape, const py::list& scalars, int64_t positions,
                int64_t cost_per_position, bool single_threaded) {
               custom::CustomLaunch launch;
               launch.inputs = std::move(inputs);
               launch.outputs = std::move(outputs);
               launch.shape = std::move(shape);
               for (const py::handle& scalar : scalars) {
                 // pybind11 has no c10::Scalar caster: floats, then ints and bools.
                 if (PyFloat_Check(scalar.ptr())) launch.scalars.emplace_back(scalar.cast<double>());
                 else if (PyBool_Check(scalar.ptr())) launch.scalars.emplace_back(int64_t{scalar.cast<bool>()});
                 else if (PyLong_Check(scalar.ptr())) launch.scalars.emplace_back(scalar.cast<int64_t>());
                 else throw py::type_error("custom kernel scalars must be float, int or bool, not " +
                                           std::string(py::str(scalar.get_type().attr("__name__"))));
               }
               launch.positions = positions;
               launch.cost_per_position = cost_per_position;
               launch.single_threaded = single_threaded;
               py::gil_scoped_release no_gil;  // a small launch on an idle stream runs here
               custom::launch_custom_kernel(handle, launch);
             });
}

}  // namespace kiln::torch_integration
