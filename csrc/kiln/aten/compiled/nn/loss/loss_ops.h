// Compiled negative log-likelihood losses: nll_loss (input (C) or (N, C)) and
// nll_loss2d (input (N, C, H, W)), forward and backward, with class weights,
// ignore_index and every reduction. cross_entropy reaches them through
// log_softmax. Registered in aten/compiled/nn/norm/registration.cc.
//
// The loss of a position loads input[..., target, ...] and weight[target]
// through indexed loads (the target times the class stride). reduction=none is
// one pointwise kernel; mean and sum are two reductions (the total weight,
// then the loss; mean divides each term by the total weight). The backward is
// one pointwise kernel over the input's shape that compares each element's
// class coordinate with its target.
//
// Out-of-range targets: the CPU raises IndexError("Target 7 is out of
// bounds."). Kiln checks the targets on the device (index_checks.h): the error
// is raised at once when the stream was idle, else by the next synchronizing
// call as a RuntimeError, as CUDA reports device-side asserts. The kernels
// never load outside the input: an out-of-range target yields NaN in the loss
// and no gradient.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight,
                                                    int64_t reduction, int64_t ignore_index);
std::tuple<at::Tensor&, at::Tensor&> nll_loss_forward_out(
    const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
    int64_t reduction, int64_t ignore_index, at::Tensor& output, at::Tensor& total_weight);
at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& target, const std::optional<at::Tensor>& weight,
                             int64_t reduction, int64_t ignore_index, const at::Tensor& total_weight);
at::Tensor& nll_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                  int64_t reduction, int64_t ignore_index,
                                  const at::Tensor& total_weight, at::Tensor& grad_input);

std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight,
                                                      int64_t reduction, int64_t ignore_index);
std::tuple<at::Tensor&, at::Tensor&> nll_loss2d_forward_out(
    const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
    int64_t reduction, int64_t ignore_index, at::Tensor& output, at::Tensor& total_weight);
at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               const at::Tensor& target, const std::optional<at::Tensor>& weight,
                               int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight);
at::Tensor& nll_loss2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                    int64_t reduction, int64_t ignore_index,
                                    const at::Tensor& total_weight, at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
