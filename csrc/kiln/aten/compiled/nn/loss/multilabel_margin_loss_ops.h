// Compiled multilabel_margin_loss_forward and multilabel_margin_loss_backward.
// Registered in aten/compiled/nn/loss/registration.cc.
//
// As ATen's CPU kernel: a sample's targets are its target row up to the first
// negative entry; is_target marks them; the sample's loss sums, over every
// (target j, non-target class d) pair, max(0, 1 - x[t_j] + x[d]), in double,
// rounded to the dtype and divided by the class count. The gradient of class
// d counts the pairs that push it up (d a non-target) minus those that push
// it down (d a target), times 1 / classes (and 1 / samples for a mean) and
// grad_output. Every count is a compiled reduction over the pairs, x[t_j]
// through indexed loads. Targets outside [-1, classes) raise the CPU's
// "argument #2 'target' is out of range" on the device (index_checks.h).
// Float32 and float64 only, as the CPU's kernel.
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> multilabel_margin_loss_forward(const at::Tensor& self,
                                                                  const at::Tensor& target,
                                                                  int64_t reduction);
std::tuple<at::Tensor&, at::Tensor&> multilabel_margin_loss_forward_out(
    const at::Tensor& self, const at::Tensor& target, int64_t reduction, at::Tensor& output,
    at::Tensor& is_target);
at::Tensor multilabel_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, int64_t reduction,
                                           const at::Tensor& is_target);
at::Tensor& multilabel_margin_loss_backward_out(const at::Tensor& grad_output,
                                                const at::Tensor& self, const at::Tensor& target,
                                                int64_t reduction, const at::Tensor& is_target,
                                                at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
