// Compiled unary extras: sinc, entr, signbit, angle (real inputs), logit,
// frexp, hardshrink and softshrink, with the backward ops autograd reaches
// (logit_backward, hardshrink_backward, softshrink_backward). Functional,
// in-place and out= forms where ATen has them. Registered in
// aten/compiled/pointwise/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor sinc(const at::Tensor& self);
at::Tensor& sinc_(at::Tensor& self);
at::Tensor& sinc_out(const at::Tensor& self, at::Tensor& out);
at::Tensor special_entr(const at::Tensor& self);
at::Tensor& special_entr_out(const at::Tensor& self, at::Tensor& out);
at::Tensor signbit(const at::Tensor& self);
at::Tensor& signbit_out(const at::Tensor& self, at::Tensor& out);
// Real inputs only: a complex input raises (kiln has no complex kernels).
at::Tensor angle(const at::Tensor& self);
at::Tensor& angle_out(const at::Tensor& self, at::Tensor& out);

at::Tensor logit(const at::Tensor& self, std::optional<double> eps);
at::Tensor& logit_(at::Tensor& self, std::optional<double> eps);
at::Tensor& logit_out(const at::Tensor& self, std::optional<double> eps, at::Tensor& out);
at::Tensor logit_backward(const at::Tensor& grad_output, const at::Tensor& self,
                          std::optional<double> eps);
at::Tensor& logit_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                               std::optional<double> eps, at::Tensor& grad_input);

std::tuple<at::Tensor&, at::Tensor&> frexp_out(const at::Tensor& self, at::Tensor& mantissa,
                                               at::Tensor& exponent);

at::Tensor hardshrink(const at::Tensor& self, const c10::Scalar& lambd);
at::Tensor& hardshrink_out(const at::Tensor& self, const c10::Scalar& lambd, at::Tensor& out);
at::Tensor softshrink(const at::Tensor& self, const c10::Scalar& lambd);
at::Tensor& softshrink_out(const at::Tensor& self, const c10::Scalar& lambd, at::Tensor& out);
at::Tensor hardshrink_backward(const at::Tensor& grad_out, const at::Tensor& self,
                               const c10::Scalar& lambd);
at::Tensor& hardshrink_backward_out(const at::Tensor& grad_out, const at::Tensor& self,
                                    const c10::Scalar& lambd, at::Tensor& grad_input);
at::Tensor softshrink_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               const c10::Scalar& lambd);
at::Tensor& softshrink_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    const c10::Scalar& lambd, at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
