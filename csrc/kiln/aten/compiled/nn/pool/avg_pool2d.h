// avg_pool2d and its backward (avg_pool2d.cc). Semantics of the 2-D
// poolings: nn/pool/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor avg_pool2d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override);
at::Tensor& avg_pool2d_out(const at::Tensor& self, at::IntArrayRef kernel_size,
                           at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override,
                           at::Tensor& out);
at::Tensor avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               at::IntArrayRef kernel_size, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override);
at::Tensor& avg_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode,
                                    bool count_include_pad,
                                    std::optional<int64_t> divisor_override,
                                    at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
