// Bindings of the compiled path (torch.compile's programs): torch_kiln._C._Program.
#pragma once

#include <pybind11/pybind11.h>

namespace kiln::torch_integration {

void bind_program(pybind11::module& module);

}  // namespace kiln::torch_integration
