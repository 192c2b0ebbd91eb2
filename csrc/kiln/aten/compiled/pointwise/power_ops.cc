#include "kiln/aten/compiled/pointwise/power_ops.h"

#include <ATen/ScalarOps.h>
#include <cmath>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/fill.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/pow_meta.h>
#include <ATen/ops/result_type.h>

#include "kiln/aten/compiled/pointwise/complex_arithmetic.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;

// The kernel for one exponent: its key, body and launch scalars.
struct PowerPlan {
  const char* key;
  PointwiseBody body;
  c10::SmallVector<c10::Scalar, 1> scalars;
};

PointwiseBody apply(OpCode op) {
  return [op](PointwiseContext& context) -> std::vector<ir::ValueId> {
    return {context.unary(op, context.promoted(0))};
  };
}

// x*x, x*x*x or 1/(x*x); `round_products` rounds the first product to the
// common (half) dtype, as ATen's bfloat16 arithmetic does.
PointwiseBody product(int power, bool round_products) {
  return [power, round_products](PointwiseContext& context) -> std::vector<ir::ValueId> {
    ir::ValueId x = context.promoted(0);
    ir::ValueId square = context.binary(OpCode::kMultiply, x, x);
    if (power == 2) return {square};
    if (round_products) square = context.builder.cast(square, context.common);
    if (power == 3) return {context.binary(OpCode::kMultiply, square, x)};
    return {context.unary(OpCode::kReciprocal, square)};
  };
}

std::vector<ir::ValueId> generic_power(PointwiseContext& context) {
  return {context.binary(OpCode::kPower, context.promoted(0), context.scalar_as(0, context.common))};
}

// float32 to a double exponent, computed in double and rounded once.
std::vector<ir::ValueId> double_power(PointwiseContext& context) {
  ir::ValueId x = context.builder.cast(context.promoted(0), ir::DType::kFloat64);
  ir::ValueId power = context.binary(OpCode::kPower, x, context.scalar_as(0, ir::DType::kFloat64));
  return {context.builder.cast(power, context.common)};
}

// True when rounding the double exponent `value` to float changes what pow
// does with it: makes it zero, or integral (which decides whether a negative
// base gives NaN), or neither where it was.
bool float_changes_exponent(double value) {
  if (!std::isfinite(value)) return false;
  const double rounded = static_cast<double>(static_cast<float>(value));
  return (rounded == 0.0) != (value == 0.0) ||
         (std::nearbyint(rounded) == rounded) != (std::nearbyint(value) == value);
}

PowerPlan plan_for(const c10::Scalar& exponent, c10::ScalarType type) {
  if (exponent.equal(0.0) || exponent.equal(false)) {
    return {"pow_zero", [](PointwiseContext& context) -> std::vector<ir::ValueId> {
              return {context.constant(1.0)};
            }, {}};
  }
  if (exponent.equal(1.0) || exponent.equal(true)) {
    return {"pow_one", [](PointwiseContext& context) -> std::vector<ir::ValueId> {
              return {context.promoted(0)};
            }, {}};
  }
  bool special = type == c10::ScalarType::Float || type == c10::ScalarType::Double ||
                 type == c10::ScalarType::BFloat16;
  if (special) {
    if (exponent.equal(0.5)) return {"sqrt", apply(OpCode::kSqrt), {}};
    if (exponent.equal(-0.5)) return {"rsqrt", apply(OpCode::kRsqrt), {}};
    if (exponent.equal(-1.0)) return {"reciprocal", apply(OpCode::kReciprocal), {}};
    bool bfloat16 = type == c10::ScalarType::BFloat16;
    // bfloat16 compares the exponent after rounding it to bfloat16.
    double value = bfloat16 ? scalar_as(exponent, type).toDouble() : exponent.toDouble();
    if (value == 2.0) return {"pow_square", product(2, false), {}};
    if (value == 3.0) return {bfloat16 ? "pow_cube_rounded" : "pow_cube", product(3, bfloat16), {}};
    if (value == -2.0) {
      return {bfloat16 ? "pow_inverse_square_rounded" : "pow_inverse_square", product(-2, bfloat16),
              {}};
    }
    // ATen's CPU kernel takes a float32 base to the exponent as a double.
    // Where rounding the exponent to float would change the answer's kind
    // (2.0000000001 becoming 2, which a negative base survives; 5e-324
    // becoming 0), the power is taken in double (found by
    // tests/python/op_fuzz.py); elsewhere float's pow is as accurate.
    if (type == c10::ScalarType::Float && float_changes_exponent(value)) {
      return {"pow_scalar_double", double_power, {c10::Scalar(value)}};
    }
    return {"pow_scalar", generic_power, {c10::Scalar(value)}};
  }
  // float16 and the integers: the exponent converted to the dtype (with
  // ATen's overflow check), then pow.
  return {"pow_scalar", generic_power, {scalar_as(exponent, type)}};
}

template <typename Meta>
const at::Tensor& run_pow(const char* op_name, StructuredIterator<Meta>& iter,
                          const at::Tensor& self, const c10::Scalar& exponent) {
  iter.meta(self, exponent);
  c10::ScalarType type = dispatch_dtype(iter);
  // Complex x**2 (torch.square) and x**-1 through the complex lowering
  // (complex_arithmetic.h); other complex exponents are not lowered.
  if (c10::isComplexType(type)) {
    const char* complex_key = exponent.equal(2.0) ? "square" : exponent.equal(-1.0) ? "reciprocal" : "";
    if (run_complex_unary(op_name, complex_key, iter)) return iter.result();
  }
  PowerPlan plan = plan_for(exponent, type);
  // Exponents 0 and 1 fill and copy on the CPU, for every dtype.
  if (std::string_view(plan.key) != "pow_zero" && std::string_view(plan.key) != "pow_one") {
    check_dispatch_dtype("pow", type, kNumericTypes);
  }
  launch_rounded(op_name, plan.key, iter, plan.scalars, plan.body);
  return iter.result();
}

}  // namespace

at::Tensor pow_tensor_scalar(const at::Tensor& self, const c10::Scalar& exponent) {
  StructuredIterator<at::meta::structured_pow_Tensor_Scalar> iter;
  return run_pow("aten::pow.Tensor_Scalar", iter, self, exponent);
}

at::Tensor& pow_tensor_scalar_(at::Tensor& self, const c10::Scalar& exponent) {
  StructuredIterator<at::meta::structured_pow_Tensor_Scalar> iter(self, Target::kInPlace);
  run_pow("aten::pow_.Scalar", iter, self, exponent);
  return self;
}

at::Tensor& pow_tensor_scalar_out(const at::Tensor& self, const c10::Scalar& exponent,
                                  at::Tensor& out) {
  StructuredIterator<at::meta::structured_pow_Tensor_Scalar> iter(out, Target::kOut);
  run_pow("aten::pow.Tensor_Scalar_out", iter, self, exponent);
  return out;
}

namespace {

void pow_scalar_into(const c10::Scalar& base, const at::Tensor& exponent, at::Tensor& out) {
  if (base.equal(1.0)) {
    out.fill_(1);
    return;
  }
  // A CPU wrapped number: a launch scalar of the binary pow kernel.
  at::pow_out(out, at::native::wrapped_scalar_tensor(base), exponent);
}

}  // namespace

at::Tensor pow_scalar(const c10::Scalar& base, const at::Tensor& exponent) {
  at::Tensor out = at::empty(exponent.sizes(),
                             exponent.options().dtype(at::result_type(base, exponent)));
  pow_scalar_into(base, exponent, out);
  return out;
}

at::Tensor& pow_scalar_out(const c10::Scalar& base, const at::Tensor& exponent, at::Tensor& out) {
  // As the structured wrapper: the out= tensor's dtype is kept, its size set.
  resize_out_output(out, exponent.sizes(), {}, exponent.options().dtype(out.scalar_type()));
  pow_scalar_into(base, exponent, out);
  return out;
}

}  // namespace kiln::torch_integration::compiled
