// Compiled log_sigmoid, forward and backward: what F.logsigmoid and
// binary_cross_entropy_with_logits reach. Registered in
// aten/compiled/pointwise/registration.cc.
//
// As ATen's CPU kernels: the forward writes the result and a buffer,
// exp(-|x|), the backward reads back; result = min(x, 0) - log1p(buffer), and
// the gradient is (max_deriv - sign * buffer / (1 + buffer)) * grad, with
// (max_deriv, sign) = (1, 1) for x < 0 and (0, -1) otherwise. float16 and
// bfloat16 compute in float32 and round once.
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self);
std::tuple<at::Tensor&, at::Tensor&> log_sigmoid_forward_out(const at::Tensor& self,
                                                             at::Tensor& output,
                                                             at::Tensor& buffer);
at::Tensor log_sigmoid_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                const at::Tensor& buffer);
at::Tensor& log_sigmoid_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                     const at::Tensor& buffer, at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
