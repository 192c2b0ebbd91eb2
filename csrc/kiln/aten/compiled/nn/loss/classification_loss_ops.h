// Compiled binary_cross_entropy, forward and backward, with every reduction
// and an optional weight. Registered in aten/compiled/nn/loss/registration.cc.
//
// As ATen's CPU kernels: one pointwise kernel over the squeezed operands
// computes (target - 1) * max(log1p(-input), -100) - target * max(log(input),
// -100) in the input's dtype (each step rounded as scalar_t arithmetic rounds
// it); the weight multiplies the losses in place and mean/sum reduce them
// through the compiled reductions. Inputs or targets outside [0, 1] (NaN
// included) raise the CPU's RuntimeError, found by a compiled reduction and
// reported under the rules of index_checks.h. The backward is one pointwise
// kernel, grad * (input - target) / max((1 - input) * input, 1e-12), then the
// weight and the 1 / numel of a mean.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace kiln::torch_integration::compiled {

at::Tensor binary_cross_entropy(const at::Tensor& self, const at::Tensor& target,
                                const std::optional<at::Tensor>& weight, int64_t reduction);
at::Tensor& binary_cross_entropy_out(const at::Tensor& self, const at::Tensor& target,
                                     const std::optional<at::Tensor>& weight, int64_t reduction,
                                     at::Tensor& out);
at::Tensor binary_cross_entropy_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                         const at::Tensor& target,
                                         const std::optional<at::Tensor>& weight, int64_t reduction);
at::Tensor& binary_cross_entropy_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                              const at::Tensor& target,
                                              const std::optional<at::Tensor>& weight,
                                              int64_t reduction, at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
