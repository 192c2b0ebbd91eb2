// adaptive_max_pool2d and its backward (adaptive_max_pool2d.cc);
// adaptive_max_pool1d is composite over it.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> adaptive_max_pool2d(const at::Tensor& self,
                                                       at::IntArrayRef output_size);
std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool2d_out(const at::Tensor& self,
                                                             at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices);
at::Tensor adaptive_max_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& indices);
at::Tensor& adaptive_max_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
