// Compiled regression losses: mse_loss, forward and backward, with every
// reduction. Registered in aten/compiled/nn/norm/registration.cc.
//
// As ATen's CPU kernels: the forward runs its meta function (a broadcasting
// binary op; the output resized to a scalar for mean and sum), squares the
// difference (rounded to the input's dtype first, as float16 and bfloat16
// arithmetic rounds each operation), then reduces with the compiled mean or
// sum. The backward is one pointwise kernel, norm * (input - target) * grad,
// with norm = 2 / numel for mean and 2 otherwise, converted to the dtype.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction);
at::Tensor& mse_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                         at::Tensor& out);
at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& target, int64_t reduction);
at::Tensor& mse_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const at::Tensor& target, int64_t reduction,
                                  at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
