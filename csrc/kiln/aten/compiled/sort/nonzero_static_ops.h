// Compiled nonzero_static: the coordinates of the first `size` nonzero
// elements in row-major order, padded with `fill_value`, as one sequential
// row kernel over the flattened input. Its output size is fixed by `size`,
// so unlike nonzero it never waits for the stream. combinations decomposes
// into it. Registered in aten/compiled/sort/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

at::Tensor nonzero_static(const at::Tensor& self, int64_t size, int64_t fill_value);
at::Tensor& nonzero_static_out(const at::Tensor& self, int64_t size, int64_t fill_value, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
