// Compiled smooth_l1_loss and huber_loss, forward and backward, with every
// reduction. Registered in aten/compiled/nn/loss/registration.cc.
//
// As ATen's CPU kernels: the forward is one pointwise kernel over the
// broadcast operands (smooth_l1 through its structured meta function, huber
// through a binary TensorIterator), then the compiled mean or sum; the
// backward is one pointwise kernel with norm = 1 / numel for a mean. Half
// types round every step or compute wholly in float, kernel by kernel, as the
// CPU's do (see computes_in_float).
// smooth_l1 with beta == 0 is the l1 loss; its backward then is
// sign(input - target) * norm, as the CPU's.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

at::Tensor smooth_l1_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                          double beta);
at::Tensor& smooth_l1_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                               double beta, at::Tensor& out);
at::Tensor& smooth_l1_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& target, int64_t reduction, double beta,
                                        at::Tensor& grad_input);

at::Tensor huber_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                      double delta);
at::Tensor& huber_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                           double delta, at::Tensor& out);
at::Tensor& huber_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    const at::Tensor& target, int64_t reduction, double delta,
                                    at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
