// _adaptive_avg_pool3d (and adaptive_avg_pool3d.out) and its backward
// (adaptive_avg_pool3d.cc).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor adaptive_avg_pool3d(const at::Tensor& self, at::IntArrayRef output_size);
at::Tensor& adaptive_avg_pool3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                    at::Tensor& out);
at::Tensor adaptive_avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self);
at::Tensor& adaptive_avg_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
