// A compiled whole-tensor comparison that reduces two tensors to one value:
// equal (what cov and corrcoef ask of their weights). Registered in
// aten/registration_losses.cc. (dot, which the chunked linear cross entropy
// composes, is on the library path: registration_library.cc.)
//
// equal compares with the compiled eq and all and reads the answer back: it
// returns a Python bool, so it synchronizes, as on any device.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

bool equal(const at::Tensor& self, const at::Tensor& other);

}  // namespace kiln::torch_integration::compiled
