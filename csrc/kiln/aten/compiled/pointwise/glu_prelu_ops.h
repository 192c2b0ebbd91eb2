// Compiled gated and parametric activations: glu (a * sigmoid(b) over the two
// halves of one dim) and prelu's kernel (weight already broadcast by the
// composite prelu), with their backward ops. Registered in
// aten/compiled/pointwise/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor glu(const at::Tensor& self, int64_t dim);
at::Tensor& glu_out(const at::Tensor& self, int64_t dim, at::Tensor& out);
at::Tensor glu_backward(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim);
at::Tensor& glu_backward_out(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim,
                             at::Tensor& grad_input);

at::Tensor prelu_kernel(const at::Tensor& self, const at::Tensor& weight);
// (grad_self, grad_weight); grad_weight has the broadcast shape, which
// autograd sums down to the weight's.
std::tuple<at::Tensor, at::Tensor> prelu_kernel_backward(const at::Tensor& grad_output,
                                                         const at::Tensor& self,
                                                         const at::Tensor& weight);

}  // namespace kiln::torch_integration::compiled
