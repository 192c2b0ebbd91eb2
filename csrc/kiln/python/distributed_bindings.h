// Bindings of the torch.distributed backend: torch_kiln._C._KilnBackend.
#pragma once

#include <pybind11/pybind11.h>

namespace kiln::torch_integration {

// Adds _C._register_distributed_types(), which defines _C._KilnBackend. The
// class derives from torch's c10d Backend binding, so it is defined on
// demand, by torch_kiln.distributed, once torch.distributed is loaded.
void bind_distributed(pybind11::module& module);

}  // namespace kiln::torch_integration
