// Unary ops: the meta function (structured ops) or the TensorIterator config
// (the others) the CPU uses, the CPU kernel's dtype coverage, then one IR body.
#include "kiln/aten/compiled/pointwise/unary_ops.h"

#include <ATen/TensorIterator.h>
#include <ATen/ops/acos_meta.h>
#include <ATen/ops/acosh_meta.h>
#include <ATen/ops/asin_meta.h>
#include <ATen/ops/asinh_meta.h>
#include <ATen/ops/atan_meta.h>
#include <ATen/ops/atanh_meta.h>
#include <ATen/ops/bitwise_not_meta.h>
#include <ATen/ops/ceil_meta.h>
#include <ATen/ops/cos_meta.h>
#include <ATen/ops/cosh_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/erf_meta.h>
#include <ATen/ops/erfc_meta.h>
#include <ATen/ops/exp2_meta.h>
#include <ATen/ops/exp_meta.h>
#include <ATen/ops/expm1_meta.h>
#include <ATen/ops/floor_meta.h>
#include <ATen/ops/frac_meta.h>
#include <ATen/ops/isneginf_meta.h>
#include <ATen/ops/isposinf_meta.h>
#include <ATen/ops/lgamma_meta.h>
#include <ATen/ops/log10_meta.h>
#include <ATen/ops/log1p_meta.h>
#include <ATen/ops/log2_meta.h>
#include <ATen/ops/log_meta.h>
#include <ATen/ops/neg_meta.h>
#include <ATen/ops/reciprocal_meta.h>
#include <ATen/ops/round_meta.h>
#include <ATen/ops/rsqrt_meta.h>
#include <ATen/ops/sgn_meta.h>
#include <ATen/ops/sigmoid_meta.h>
#include <ATen/ops/sign_meta.h>
#include <ATen/ops/sin_meta.h>
#include <ATen/ops/sinh_meta.h>
#include <ATen/ops/sqrt_meta.h>
#include <ATen/ops/tan_meta.h>
#include <ATen/ops/tanh_meta.h>
#include <ATen/ops/trunc_meta.h>

#include <cmath>
#include <limits>

#include "kiln/aten/compiled/pointwise/complex_arithmetic.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;

// `op` on the input in the common dtype (integers promoted to float by the
// float ops' meta functions).
PointwiseBody apply(OpCode op) {
  return [op](PointwiseContext& context) -> std::vector<ir::ValueId> {
    return {context.unary(op, context.promoted(0))};
  };
}

// The input unchanged: what floor, ceil, round and trunc do to integers (the
// CPU copies them).
std::vector<ir::ValueId> identity(PointwiseContext& context) { return {context.promoted(0)}; }

// floor, ceil, round, trunc: `op` on floating inputs, a copy of integer ones;
// bool reaches the CPU's floating-only kernel and is refused there.
PointwiseBody rounding(OpCode op) {
  return [op](PointwiseContext& context) -> std::vector<ir::ValueId> {
    if (!ir::is_floating(context.common)) return identity(context);
    return {context.unary(op, context.promoted(0))};
  };
}

// One structured unary op in its three forms.
template <typename Meta>
const at::Tensor& run_structured(const char* op_name, const char* key, const char* dispatch_name,
                                 DTypeSet allowed, StructuredIterator<Meta>& iter,
                                 const at::Tensor& self, const PointwiseBody& body) {
  iter.meta(self);
  // neg, sgn and reciprocal of complex64/complex128: the view_as_real
  // lowering (complex_arithmetic.h); the op's name without "_kiln" is its key there.
  std::string_view name(dispatch_name);
  if (run_complex_unary(op_name, name.substr(0, name.size() - 5), iter)) return iter.result();
  check_dispatch_dtype(dispatch_name, dispatch_dtype(iter), allowed);
  launch_rounded(op_name, key, iter, {}, body);
  return iter.result();
}

// Non-structured unary ops (abs): TensorIterator::unary_op as the CPU's
// unary_op_impl_out builds it.
at::Tensor run_unary_op(const char* op_name, const char* key, const char* dispatch_name,
                        DTypeSet allowed, const at::Tensor& out, const at::Tensor& self,
                        const PointwiseBody& body) {
  at::TensorBase target = out;
  at::TensorIterator iter = at::TensorIterator::unary_op(target, self);
  check_dispatch_dtype(dispatch_name, dispatch_dtype(iter), allowed);
  launch_rounded(op_name, key, iter, {}, body);
  return iter.output();
}

}  // namespace

#define KILN_DEFINE_STRUCTURED_UNARY(name, key, allowed, body)                                   \
  at::Tensor name(const at::Tensor& self) {                                                      \
    StructuredIterator<at::meta::structured_##name> iter;                                        \
    return run_structured("aten::" #name, key, #name "_kiln", allowed, iter, self, body);         \
  }                                                                                              \
  at::Tensor& name##_(at::Tensor& self) {                                                        \
    StructuredIterator<at::meta::structured_##name> iter(self, Target::kInPlace);                \
    run_structured("aten::" #name "_", key, #name "_kiln", allowed, iter, self, body);            \
    return self;                                                                                 \
  }                                                                                              \
  at::Tensor& name##_out(const at::Tensor& self, at::Tensor& out) {                              \
    StructuredIterator<at::meta::structured_##name> iter(out, Target::kOut);                     \
    run_structured("aten::" #name ".out", key, #name "_kiln", allowed, iter, self, body);         \
    return out;                                                                                  \
  }

// Float functions: the meta function promotes integers and bool to float.
#define KILN_DEFINE_FLOAT_UNARY(name, opcode) \
  KILN_DEFINE_STRUCTURED_UNARY(name, #name, kFloatingTypes, apply(opcode))

KILN_DEFINE_FLOAT_UNARY(exp, OpCode::kExp)
KILN_DEFINE_FLOAT_UNARY(exp2, OpCode::kExp2)
KILN_DEFINE_FLOAT_UNARY(expm1, OpCode::kExpm1)
KILN_DEFINE_FLOAT_UNARY(log, OpCode::kLog)
KILN_DEFINE_FLOAT_UNARY(log2, OpCode::kLog2)
KILN_DEFINE_FLOAT_UNARY(log10, OpCode::kLog10)
KILN_DEFINE_FLOAT_UNARY(log1p, OpCode::kLog1p)
KILN_DEFINE_FLOAT_UNARY(sqrt, OpCode::kSqrt)
KILN_DEFINE_FLOAT_UNARY(rsqrt, OpCode::kRsqrt)
KILN_DEFINE_FLOAT_UNARY(reciprocal, OpCode::kReciprocal)
KILN_DEFINE_FLOAT_UNARY(sin, OpCode::kSin)
KILN_DEFINE_FLOAT_UNARY(cos, OpCode::kCos)
KILN_DEFINE_FLOAT_UNARY(tan, OpCode::kTan)
KILN_DEFINE_FLOAT_UNARY(asin, OpCode::kAsin)
KILN_DEFINE_FLOAT_UNARY(acos, OpCode::kAcos)
KILN_DEFINE_FLOAT_UNARY(atan, OpCode::kAtan)
KILN_DEFINE_FLOAT_UNARY(sinh, OpCode::kSinh)
KILN_DEFINE_FLOAT_UNARY(cosh, OpCode::kCosh)
KILN_DEFINE_FLOAT_UNARY(tanh, OpCode::kTanh)
KILN_DEFINE_FLOAT_UNARY(asinh, OpCode::kAsinh)
KILN_DEFINE_FLOAT_UNARY(acosh, OpCode::kAcosh)
KILN_DEFINE_FLOAT_UNARY(atanh, OpCode::kAtanh)
KILN_DEFINE_FLOAT_UNARY(erf, OpCode::kErf)
KILN_DEFINE_FLOAT_UNARY(erfc, OpCode::kErfc)
KILN_DEFINE_FLOAT_UNARY(lgamma, OpCode::kLgamma)
KILN_DEFINE_FLOAT_UNARY(sigmoid, OpCode::kSigmoid)

// The bool check of neg is in its meta function.
KILN_DEFINE_STRUCTURED_UNARY(neg, "neg", kNumericTypes, apply(OpCode::kNegate))
KILN_DEFINE_STRUCTURED_UNARY(sign, "sign", kAllTypes, apply(OpCode::kSign))
KILN_DEFINE_STRUCTURED_UNARY(sgn, "sign", kAllTypes, apply(OpCode::kSign))
KILN_DEFINE_STRUCTURED_UNARY(floor, "floor", kNumericTypes, rounding(OpCode::kFloor))
KILN_DEFINE_STRUCTURED_UNARY(ceil, "ceil", kNumericTypes, rounding(OpCode::kCeil))
KILN_DEFINE_STRUCTURED_UNARY(round, "round", kNumericTypes, rounding(OpCode::kRound))
KILN_DEFINE_STRUCTURED_UNARY(trunc, "trunc", kNumericTypes, rounding(OpCode::kTrunc))
KILN_DEFINE_STRUCTURED_UNARY(frac, "frac", kFloatingTypes, apply(OpCode::kFrac))
KILN_DEFINE_STRUCTURED_UNARY(bitwise_not, "bitwise_not", kIntegralTypes | kBoolType,
                             apply(OpCode::kBitwiseNot))

#undef KILN_DEFINE_FLOAT_UNARY
#undef KILN_DEFINE_STRUCTURED_UNARY

// abs is not structured: abs and abs_ are composites over abs.out.
at::Tensor abs(const at::Tensor& self) {
  if (self.is_complex()) return complex_abs("aten::abs", self, at::Tensor());
  return run_unary_op("aten::abs", "abs", "abs_kiln", kNumericTypes, at::Tensor(), self,
                      apply(OpCode::kAbs));
}

at::Tensor& abs_(at::Tensor& self) {
  TORCH_CHECK(!self.is_complex(), "In-place abs is not supported for complex tensors.");
  run_unary_op("aten::abs_", "abs", "abs_kiln", kNumericTypes, self, self, apply(OpCode::kAbs));
  return self;
}

at::Tensor& abs_out(const at::Tensor& self, at::Tensor& out) {
  if (self.is_complex()) {
    complex_abs("aten::abs.out", self, out);
    return out;
  }
  run_unary_op("aten::abs.out", "abs", "abs_kiln", kNumericTypes, out, self, apply(OpCode::kAbs));
  return out;
}

// round(decimals=d) on the CPU: in the opmath type, nearbyint(x * 10^d) / 10^d
// for d > 0 and nearbyint(x / 10^-d) * 10^-d for d < 0.
namespace {

const at::Tensor& run_round_decimals(const char* op_name,
                                     StructuredIterator<at::meta::structured_round_decimals>& iter,
                                     const at::Tensor& self, int64_t decimals) {
  iter.meta(self, decimals);
  // Unlike round(), round(decimals=0) reaches the floating-only kernel for
  // integers too, and is refused there.
  check_dispatch_dtype("round_kiln", dispatch_dtype(iter), kFloatingTypes);
  if (decimals == 0) {
    launch_rounded(op_name, "round", iter, {}, rounding(OpCode::kRound));
    return iter.result();
  }
  bool negative = decimals < 0;
  double power = std::pow(10.0, static_cast<double>(negative ? -decimals : decimals));
  c10::Scalar scalars[] = {scalar_as_opmath(power, dispatch_dtype(iter))};
  launch_rounded(op_name, negative ? "round_decimals_negative" : "round_decimals", iter, scalars,
                 [negative](PointwiseContext& context) -> std::vector<ir::ValueId> {
    ir::ValueId x = context.promoted(0);
    ir::ValueId power = context.scalar_as(0, context.common);
    if (negative) {
      ir::ValueId rounded = context.unary(OpCode::kRound, context.binary(OpCode::kDivide, x, power));
      return {context.binary(OpCode::kMultiply, rounded, power)};
    }
    ir::ValueId rounded = context.unary(OpCode::kRound, context.binary(OpCode::kMultiply, x, power));
    return {context.binary(OpCode::kDivide, rounded, power)};
  });
  return iter.result();
}

}  // namespace

at::Tensor round_decimals(const at::Tensor& self, int64_t decimals) {
  StructuredIterator<at::meta::structured_round_decimals> iter;
  return run_round_decimals("aten::round.decimals", iter, self, decimals);
}

at::Tensor& round_decimals_(at::Tensor& self, int64_t decimals) {
  StructuredIterator<at::meta::structured_round_decimals> iter(self, Target::kInPlace);
  run_round_decimals("aten::round_.decimals", iter, self, decimals);
  return self;
}

at::Tensor& round_decimals_out(const at::Tensor& self, int64_t decimals, at::Tensor& out) {
  StructuredIterator<at::meta::structured_round_decimals> iter(out, Target::kOut);
  run_round_decimals("aten::round.decimals_out", iter, self, decimals);
  return out;
}

// logical_not: the CPU's config (no dtype check between input and output), so
// an out= tensor of any dtype receives 0 or 1.
namespace {

at::Tensor run_logical_not(const char* op_name, const at::Tensor& out, const at::Tensor& self) {
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .check_all_same_dtype(false)
                                .add_output(out)
                                .add_const_input(self)
                                .build();
  launch_pointwise(op_name, "logical_not", iter, {},
                   [](PointwiseContext& context) -> std::vector<ir::ValueId> {
    return {context.unary(OpCode::kLogicalNot, context.inputs[0])};
  });
  return iter.output();
}

// A bool result of `op` on the input, for isnan and isinf.
at::Tensor run_predicate(const char* op_name, const char* key, OpCode op, const at::Tensor& self) {
  at::Tensor result;
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .check_all_same_dtype(false)
                                .add_output(result)
                                .add_const_input(self)
                                .declare_static_dtype(c10::ScalarType::Bool)
                                .build();
  launch_pointwise(op_name, key, iter, {}, [op](PointwiseContext& context) -> std::vector<ir::ValueId> {
    return {context.unary(op, context.inputs[0])};
  });
  return iter.output();
}

}  // namespace

at::Tensor logical_not(const at::Tensor& self) {
  at::Tensor result = at::empty({0}, self.options().dtype(c10::ScalarType::Bool));
  return run_logical_not("aten::logical_not", result, self);
}

at::Tensor& logical_not_(at::Tensor& self) {
  run_logical_not("aten::logical_not_", self, self);
  return self;
}

at::Tensor& logical_not_out(const at::Tensor& self, at::Tensor& out) {
  run_logical_not("aten::logical_not.out", out, self);
  return out;
}

at::Tensor isnan(const at::Tensor& self) {
  return run_predicate("aten::isnan", "isnan", OpCode::kIsNan, self);
}

at::Tensor isinf(const at::Tensor& self) {
  return run_predicate("aten::isinf", "isinf", OpCode::kIsInf, self);
}

// isposinf and isneginf: ATen's meta function (bool output, no complex), then
// `x == ±inf` on floating inputs; integers and bool are never infinite, so
// their kernel stores false, as the CPU's fill does.
namespace {

template <typename Meta>
const at::Tensor& run_infinity_test(const char* op_name, const char* key, double infinity,
                                    StructuredIterator<Meta>& iter, const at::Tensor& self) {
  iter.meta(self);
  launch_pointwise(op_name, key, iter, {}, [infinity](PointwiseContext& context)
                                               -> std::vector<ir::ValueId> {
    ir::DType type = context.input_dtypes[0];
    if (!ir::is_floating(type)) return {context.builder.constant(0.0, ir::DType::kBool)};
    ir::ValueId bound = context.builder.constant(infinity, ir::compute_dtype(type));
    return {context.binary(OpCode::kEqual, context.inputs[0], bound)};
  });
  return iter.result();
}

}  // namespace

#define KILN_DEFINE_INFINITY_TEST(name, infinity)                                      \
  at::Tensor name(const at::Tensor& self) {                                            \
    StructuredIterator<at::meta::structured_##name> iter;                              \
    return run_infinity_test("aten::" #name, #name, infinity, iter, self);             \
  }                                                                                    \
  at::Tensor& name##_out(const at::Tensor& self, at::Tensor& out) {                    \
    StructuredIterator<at::meta::structured_##name> iter(out, Target::kOut);           \
    run_infinity_test("aten::" #name ".out", #name, infinity, iter, self);             \
    return out;                                                                        \
  }

KILN_DEFINE_INFINITY_TEST(isposinf, std::numeric_limits<double>::infinity())
KILN_DEFINE_INFINITY_TEST(isneginf, -std::numeric_limits<double>::infinity())

#undef KILN_DEFINE_INFINITY_TEST

// nan_to_num: replacements converted as the CPU kernel converts them, with a
// plain cast (so 1e10 becomes inf in float16, without an overflow error).
namespace {

double largest(c10::ScalarType type, bool lowest) {
  double value = 0.0;
  switch (type) {
    case c10::ScalarType::Half: value = 65504.0; break;
    case c10::ScalarType::BFloat16: value = 3.38953138925153547590470800371487866880e+38; break;
    case c10::ScalarType::Float: value = std::numeric_limits<float>::max(); break;
    default: value = std::numeric_limits<double>::max(); break;
  }
  return lowest ? -value : value;
}

at::Tensor& run_nan_to_num(const char* op_name, at::Tensor& out, const at::Tensor& self,
                           std::optional<double> nan, std::optional<double> posinf,
                           std::optional<double> neginf) {
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "nan_to_num: dtype of out: ",
              out.scalar_type(), " should be same as input: ", self.scalar_type());
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    at::TensorBase target = out;
    at::TensorIterator iter = at::TensorIterator::unary_op(target, self);
    launch_pointwise(op_name, "copy", iter, {}, identity);
    return out;
  }
  at::TensorBase target = out;
  at::TensorIterator iter = at::TensorIterator::unary_op(target, self);
  c10::ScalarType type = dispatch_dtype(iter);
  check_dispatch_dtype("nan_to_num", type, kFloatingTypes);
  c10::Scalar scalars[] = {nan.value_or(0.0), posinf.value_or(largest(type, false)),
                           neginf.value_or(largest(type, true))};
  launch_pointwise(op_name, "nan_to_num", iter, scalars,
                   [](PointwiseContext& context) -> std::vector<ir::ValueId> {
    ir::Builder& builder = context.builder;
    ir::ValueId x = context.promoted(0);
    ir::ValueId positive = context.binary(OpCode::kGreater, x, context.constant(0.0));
    ir::ValueId infinite = builder.select(positive, context.scalar_as(1, context.common),
                                          context.scalar_as(2, context.common));
    ir::ValueId result = builder.select(context.unary(OpCode::kIsInf, x), infinite, x);
    return {builder.select(context.unary(OpCode::kIsNan, x), context.scalar_as(0, context.common),
                           result)};
  });
  return out;
}

}  // namespace

at::Tensor nan_to_num(const at::Tensor& self, std::optional<double> nan,
                      std::optional<double> posinf, std::optional<double> neginf) {
  at::Tensor result = at::empty_like(self);
  return run_nan_to_num("aten::nan_to_num", result, self, nan, posinf, neginf);
}

at::Tensor& nan_to_num_(at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                        std::optional<double> neginf) {
  return run_nan_to_num("aten::nan_to_num_", self, self, nan, posinf, neginf);
}

at::Tensor& nan_to_num_out(const at::Tensor& self, std::optional<double> nan,
                           std::optional<double> posinf, std::optional<double> neginf,
                           at::Tensor& out) {
  return run_nan_to_num("aten::nan_to_num.out", out, self, nan, posinf, neginf);
}

}  // namespace kiln::torch_integration::compiled
