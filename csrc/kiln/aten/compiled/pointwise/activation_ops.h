// Compiled activations and the backward kernels ATen's autograd formulas call
// for them. Registered in aten/compiled/pointwise/registration.cc.
//
// Each formula is the one ATen's CPU kernel evaluates, in the same order and
// in the same opmath type (float for float16 and bfloat16), with its scalar
// parameters converted the same way; so a result differs from the CPU's by the
// last-bit differences of the math library only. relu is clamp_min(x, 0) and
// hardtanh a clamp (clamp_ops.h), as in ATen.
//
// Backward kernels take the argument order of their ATen schema; their
// iterators order the operands as the CPU's meta functions do.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/util/string_view.h>

namespace kiln::torch_integration::compiled {

at::Tensor relu(const at::Tensor& self);
at::Tensor& relu_(at::Tensor& self);

at::Tensor threshold(const at::Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value);
at::Tensor& threshold_(at::Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value);
at::Tensor& threshold_out(const at::Tensor& self, const c10::Scalar& threshold,
                          const c10::Scalar& value, at::Tensor& out);
at::Tensor threshold_backward(const at::Tensor& grad_output, const at::Tensor& self,
                              const c10::Scalar& threshold);
at::Tensor& threshold_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                   const c10::Scalar& threshold, at::Tensor& grad_input);

at::Tensor gelu(const at::Tensor& self, c10::string_view approximate);
at::Tensor& gelu_(at::Tensor& self, c10::string_view approximate);
at::Tensor& gelu_out(const at::Tensor& self, c10::string_view approximate, at::Tensor& out);
at::Tensor gelu_backward(const at::Tensor& grad_output, const at::Tensor& self,
                         c10::string_view approximate);
at::Tensor& gelu_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                              c10::string_view approximate, at::Tensor& grad_input);

// Activations of one tensor with no parameters, and backward kernels of
// (grad_output, self or output).
#define KILN_DECLARE_ACTIVATION(name)                \
  at::Tensor name(const at::Tensor& self);           \
  at::Tensor& name##_(at::Tensor& self);             \
  at::Tensor& name##_out(const at::Tensor& self, at::Tensor& out);
#define KILN_DECLARE_BACKWARD(name)                                                       \
  at::Tensor name(const at::Tensor& grad_output, const at::Tensor& other);                \
  at::Tensor& name##_out(const at::Tensor& grad_output, const at::Tensor& other,          \
                         at::Tensor& grad_input);

KILN_DECLARE_ACTIVATION(silu)
KILN_DECLARE_ACTIVATION(mish)
KILN_DECLARE_ACTIVATION(hardsigmoid)
KILN_DECLARE_ACTIVATION(hardswish)
KILN_DECLARE_BACKWARD(silu_backward)
KILN_DECLARE_BACKWARD(sigmoid_backward)
KILN_DECLARE_BACKWARD(tanh_backward)
KILN_DECLARE_BACKWARD(hardsigmoid_backward)
KILN_DECLARE_BACKWARD(hardswish_backward)

#undef KILN_DECLARE_ACTIVATION
#undef KILN_DECLARE_BACKWARD

at::Tensor leaky_relu(const at::Tensor& self, const c10::Scalar& negative_slope);
at::Tensor& leaky_relu_(at::Tensor& self, const c10::Scalar& negative_slope);
at::Tensor& leaky_relu_out(const at::Tensor& self, const c10::Scalar& negative_slope,
                           at::Tensor& out);
at::Tensor leaky_relu_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               const c10::Scalar& negative_slope, bool self_is_result);
at::Tensor& leaky_relu_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    const c10::Scalar& negative_slope, bool self_is_result,
                                    at::Tensor& grad_input);

at::Tensor hardtanh(const at::Tensor& self, const c10::Scalar& min_val, const c10::Scalar& max_val);
at::Tensor& hardtanh_(at::Tensor& self, const c10::Scalar& min_val, const c10::Scalar& max_val);
at::Tensor& hardtanh_out(const at::Tensor& self, const c10::Scalar& min_val,
                         const c10::Scalar& max_val, at::Tensor& out);
at::Tensor hardtanh_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const c10::Scalar& min_val, const c10::Scalar& max_val);
at::Tensor& hardtanh_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const c10::Scalar& min_val, const c10::Scalar& max_val,
                                  at::Tensor& grad_input);

at::Tensor elu(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
               const c10::Scalar& input_scale);
at::Tensor& elu_(at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                 const c10::Scalar& input_scale);
at::Tensor& elu_out(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                    const c10::Scalar& input_scale, at::Tensor& out);
at::Tensor elu_backward(const at::Tensor& grad_output, const c10::Scalar& alpha,
                        const c10::Scalar& scale, const c10::Scalar& input_scale, bool is_result,
                        const at::Tensor& self_or_result);
at::Tensor& elu_backward_out(const at::Tensor& grad_output, const c10::Scalar& alpha,
                             const c10::Scalar& scale, const c10::Scalar& input_scale,
                             bool is_result, const at::Tensor& self_or_result,
                             at::Tensor& grad_input);

at::Tensor softplus(const at::Tensor& self, const c10::Scalar& beta, const c10::Scalar& threshold);
at::Tensor& softplus_out(const at::Tensor& self, const c10::Scalar& beta,
                         const c10::Scalar& threshold, at::Tensor& out);
at::Tensor softplus_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const c10::Scalar& beta, const c10::Scalar& threshold);
at::Tensor& softplus_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const c10::Scalar& beta, const c10::Scalar& threshold,
                                  at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
