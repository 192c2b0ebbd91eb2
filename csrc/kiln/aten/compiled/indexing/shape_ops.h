// Compiled shape ops that move data: cat (stack decomposes to it), flip and
// roll. Each is one or more copy kernels (indexed_kernel.h) between strided
// views; flip reads through negative strides. Registered in
// aten/compiled/indexing/registration.cc.
#pragma once

#include <ATen/core/IListRef.h>
#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

// cat.out: shapes, dtype promotion, the skipping of 1-D empty tensors, the
// output's memory format and the errors follow ATen's meta function.
at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out);
at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim);
at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims);
at::Tensor roll(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims);

}  // namespace kiln::torch_integration::compiled
