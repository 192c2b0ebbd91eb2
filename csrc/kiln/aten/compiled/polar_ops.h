// torch.polar: a complex tensor from magnitudes and angles.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

// out = abs * (cos(angle) + i sin(angle)), broadcast; `polar` (composite in
// ATen) allocates the complex result and reaches the device here.
at::Tensor& polar_out(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
