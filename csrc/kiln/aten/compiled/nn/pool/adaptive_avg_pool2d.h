// _adaptive_avg_pool2d (adaptive_avg_pool2d is composite: a 1x1 output is a
// mean over H and W there), the CPU's adaptive_avg_pool2d.out, and the
// backward (adaptive_avg_pool2d.cc).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor adaptive_avg_pool2d(const at::Tensor& self, at::IntArrayRef output_size);
at::Tensor& adaptive_avg_pool2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                    at::Tensor& out);
at::Tensor adaptive_avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self);

}  // namespace kiln::torch_integration::compiled
