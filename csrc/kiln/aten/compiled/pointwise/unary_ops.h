// Compiled unary ops: math functions, rounding, sign and bit ops, the
// predicates isnan/isinf and nan_to_num. Functional, in-place and out= forms;
// registered in aten/compiled/pointwise/registration.cc.
//
// Structured ops run ATen's meta function (structured_iterator.h), so integer
// inputs of the float functions (exp, sin, sigmoid, ...) promote to the
// default float dtype exactly as on the CPU, and in-place or out= calls raise
// the CPU's errors. Each op accepts the dtypes its CPU kernel dispatches over
// (among those compiled kernels cover) and raises NotImplementedError for the
// others, as the CPU does.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace kiln::torch_integration::compiled {

#define KILN_DECLARE_UNARY(name)                       \
  at::Tensor name(const at::Tensor& self);             \
  at::Tensor& name##_(at::Tensor& self);               \
  at::Tensor& name##_out(const at::Tensor& self, at::Tensor& out);

KILN_DECLARE_UNARY(abs)
KILN_DECLARE_UNARY(neg)
KILN_DECLARE_UNARY(sign)
KILN_DECLARE_UNARY(sgn)
KILN_DECLARE_UNARY(exp)
KILN_DECLARE_UNARY(exp2)
KILN_DECLARE_UNARY(expm1)
KILN_DECLARE_UNARY(log)
KILN_DECLARE_UNARY(log2)
KILN_DECLARE_UNARY(log10)
KILN_DECLARE_UNARY(log1p)
KILN_DECLARE_UNARY(sqrt)
KILN_DECLARE_UNARY(rsqrt)
KILN_DECLARE_UNARY(reciprocal)
KILN_DECLARE_UNARY(sin)
KILN_DECLARE_UNARY(cos)
KILN_DECLARE_UNARY(tan)
KILN_DECLARE_UNARY(asin)
KILN_DECLARE_UNARY(acos)
KILN_DECLARE_UNARY(atan)
KILN_DECLARE_UNARY(sinh)
KILN_DECLARE_UNARY(cosh)
KILN_DECLARE_UNARY(tanh)
KILN_DECLARE_UNARY(asinh)
KILN_DECLARE_UNARY(acosh)
KILN_DECLARE_UNARY(atanh)
KILN_DECLARE_UNARY(erf)
KILN_DECLARE_UNARY(erfc)
KILN_DECLARE_UNARY(lgamma)
KILN_DECLARE_UNARY(sigmoid)
KILN_DECLARE_UNARY(floor)
KILN_DECLARE_UNARY(ceil)
KILN_DECLARE_UNARY(round)
KILN_DECLARE_UNARY(trunc)
KILN_DECLARE_UNARY(frac)
KILN_DECLARE_UNARY(bitwise_not)
KILN_DECLARE_UNARY(logical_not)

#undef KILN_DECLARE_UNARY

// round(decimals=d): x * 10^d rounded half to even, divided back.
at::Tensor round_decimals(const at::Tensor& self, int64_t decimals);
at::Tensor& round_decimals_(at::Tensor& self, int64_t decimals);
at::Tensor& round_decimals_out(const at::Tensor& self, int64_t decimals, at::Tensor& out);

// Bool results; integer and bool inputs are never NaN or infinite.
at::Tensor isnan(const at::Tensor& self);
at::Tensor isinf(const at::Tensor& self);
at::Tensor isposinf(const at::Tensor& self);
at::Tensor& isposinf_out(const at::Tensor& self, at::Tensor& out);
at::Tensor isneginf(const at::Tensor& self);
at::Tensor& isneginf_out(const at::Tensor& self, at::Tensor& out);

// NaN, +inf and -inf replaced (by 0 and the dtype's largest and lowest finite
// values unless given); integer and bool tensors are copied unchanged.
at::Tensor nan_to_num(const at::Tensor& self, std::optional<double> nan,
                      std::optional<double> posinf, std::optional<double> neginf);
at::Tensor& nan_to_num_(at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                        std::optional<double> neginf);
at::Tensor& nan_to_num_out(const at::Tensor& self, std::optional<double> nan,
                           std::optional<double> posinf, std::optional<double> neginf,
                           at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
