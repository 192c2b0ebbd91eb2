// avg_pool3d and its backward (avg_pool3d.cc).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor avg_pool3d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override);
at::Tensor& avg_pool3d_out(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                           at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, at::Tensor& out);
at::Tensor avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               at::IntArrayRef kernel_size, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override);
at::Tensor& avg_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                                    std::optional<int64_t> divisor_override, at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
