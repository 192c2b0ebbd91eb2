// max_pool2d_with_indices and its backward (max_pool2d.cc). Semantics of
// the 2-D poolings: nn/pool/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode);
std::tuple<at::Tensor&, at::Tensor&> max_pool2d_with_indices_out(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, at::Tensor& out,
    at::Tensor& indices);
at::Tensor max_pool2d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, const at::Tensor& indices);
at::Tensor& max_pool2d_with_indices_backward_out(const at::Tensor& grad_output,
                                                 const at::Tensor& self,
                                                 at::IntArrayRef kernel_size,
                                                 at::IntArrayRef stride, at::IntArrayRef padding,
                                                 at::IntArrayRef dilation, bool ceil_mode,
                                                 const at::Tensor& indices,
                                                 at::Tensor& grad_input);

// grad_input = 0, then grad_output added at each index (h * W + w within its
// plane); floating dtypes. Also the backward of adaptive max pooling.
void max_pool2d_backward_into(const at::Tensor& grad_output, const at::Tensor& indices,
                              const at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
