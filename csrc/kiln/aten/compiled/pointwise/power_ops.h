// Compiled pow with a Scalar exponent (pow.Tensor_Scalar, pow_.Scalar) or a
// Scalar base (pow.Scalar). pow.Tensor_Tensor is a binary op (binary_ops.h).
// Registered in aten/compiled/pointwise/registration.cc.
//
// The kernel chosen for an exponent follows ATen's CPU kernel, so results
// round as the CPU's do:
//   - exponent 0: ones; 1: a copy;
//   - float32, float64, bfloat16: 0.5, -0.5 and -1 run sqrt, rsqrt and
//     reciprocal;
//   - float32, float64: 2, 3 and -2 multiply (x*x, x*x*x, 1/(x*x));
//   - bfloat16: the exponent is first rounded to bfloat16 (so 2.001 squares),
//     and x*x*x and 1/(x*x) round to bfloat16 after the first product, as
//     ATen's bfloat16 arithmetic does;
//   - float16: pow(x, exponent rounded to float16), with no special cases;
//   - integers: exact integer powers (negative integer exponents are refused
//     by the meta function, as on the CPU).
// Any other exponent is a launch scalar: one kernel serves every value.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

namespace kiln::torch_integration::compiled {

at::Tensor pow_tensor_scalar(const at::Tensor& self, const c10::Scalar& exponent);
at::Tensor& pow_tensor_scalar_(at::Tensor& self, const c10::Scalar& exponent);
at::Tensor& pow_tensor_scalar_out(const at::Tensor& self, const c10::Scalar& exponent,
                                  at::Tensor& out);

// base ** exponent: ones where base is 1, otherwise pow.Tensor_Tensor with
// the base as a wrapped number.
at::Tensor pow_scalar(const c10::Scalar& base, const at::Tensor& exponent);
at::Tensor& pow_scalar_out(const c10::Scalar& base, const at::Tensor& exponent, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
