// Compiled multi_margin_loss, forward and backward. Registered in
// aten/compiled/nn/loss/registration.cc.
//
// As ATen's CPU kernel, per sample n with target class t:
//   loss[n] = sum over d != t with z = margin - x[n, t] + x[n, d] > 0 of
//             (z or z^2) * weight[t], divided by the class count;
// mean and sum accumulate the samples in double, as the CPU's acc_type. The
// forward is one compiled reduction over the classes (x[n, t] and weight[t]
// through indexed loads); the backward a reduction for the target's own
// gradient (minus the sum of the others) and one pointwise kernel. Targets
// outside [0, classes) raise the CPU's "target out of range", found on the
// device under the rules of index_checks.h. Float32 and float64 only, as the
// CPU's kernel.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include <optional>

namespace kiln::torch_integration::compiled {

at::Tensor multi_margin_loss(const at::Tensor& self, const at::Tensor& target, const c10::Scalar& p,
                             const c10::Scalar& margin, const std::optional<at::Tensor>& weight,
                             int64_t reduction);
at::Tensor& multi_margin_loss_out(const at::Tensor& self, const at::Tensor& target,
                                  const c10::Scalar& p, const c10::Scalar& margin,
                                  const std::optional<at::Tensor>& weight, int64_t reduction,
                                  at::Tensor& out);
at::Tensor multi_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                      const at::Tensor& target, const c10::Scalar& p,
                                      const c10::Scalar& margin,
                                      const std::optional<at::Tensor>& weight, int64_t reduction);
at::Tensor& multi_margin_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, const c10::Scalar& p,
                                           const c10::Scalar& margin,
                                           const std::optional<at::Tensor>& weight,
                                           int64_t reduction, at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
