// Bindings of custom kernels (torch_kiln.kernels): load and launch.
#pragma once

#include <pybind11/pybind11.h>

namespace kiln::torch_integration {

void bind_custom_kernels(pybind11::module& module);

}  // namespace kiln::torch_integration
