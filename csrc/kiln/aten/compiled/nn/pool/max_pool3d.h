// 3-D max pooling with indices and adaptive 3-D max pooling, forward and
// backward (max_pool3d.cc).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> max_pool3d_with_indices(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode);
std::tuple<at::Tensor&, at::Tensor&> max_pool3d_with_indices_out(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, at::Tensor& out,
    at::Tensor& indices);
at::Tensor max_pool3d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, const at::Tensor& indices);
at::Tensor& max_pool3d_with_indices_backward_out(
    const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
    const at::Tensor& indices, at::Tensor& grad_input);
std::tuple<at::Tensor, at::Tensor> adaptive_max_pool3d(const at::Tensor& self,
                                                       at::IntArrayRef output_size);
std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool3d_out(const at::Tensor& self,
                                                             at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices);
at::Tensor adaptive_max_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& indices);
at::Tensor& adaptive_max_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
