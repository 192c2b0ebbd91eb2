// Binary ops: the TensorIterator config each op uses on the CPU, then one
// IR body. Integer division by zero yields 0 instead of raising (see
// codegen/prelude.cc).
#include "kiln/aten/compiled/pointwise/binary_ops.h"

#include <ATen/ScalarOps.h>
#include <ATen/native/BinaryOps.h>

#include "kiln/aten/compiled/pointwise/complex_arithmetic.h"
#include "kiln/aten/compiled/launch/pointwise.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;

enum class Config {
  kBinary,       // result in the common dtype
  kFloat,        // integer inputs promote to the default float dtype
  kComparison,   // bool result (or the out= tensor's dtype)
};

at::TensorIterator make_iterator(Config config, at::TensorBase out, const at::Tensor& self,
                                 const at::Tensor& other) {
  switch (config) {
    case Config::kBinary: return at::TensorIterator::binary_op(out, self, other);
    case Config::kFloat: return at::TensorIterator::binary_float_op(out, self, other);
    case Config::kComparison: return at::TensorIterator::comparison_op(out, self, other);
  }
  TORCH_INTERNAL_ASSERT(false);
}

// A body applying `op` to both inputs promoted to the common dtype.
PointwiseBody apply(OpCode op) {
  return [op](PointwiseContext& context) -> std::vector<ir::ValueId> {
    return {context.binary(op, context.promoted(0), context.promoted(1))};
  };
}

// With a float16 or bfloat16 tensor, a Python scalar rounded to its dtype
// first, as the CPU's kernels for these ops read it (PointwiseContext::rounded;
// found by tests/python/op_fuzz.py: half(-inf) + 3.4e38 is NaN on the CPU,
// fmod(half(5), 0.1) is 0.00122).
PointwiseBody apply_rounded(OpCode op) {
  return [op](PointwiseContext& context) -> std::vector<ir::ValueId> {
    return {context.binary(op, context.rounded(0), context.rounded(1))};
  };
}

// mul and the divisions: ATen's CPU kernels read a scalar second operand's
// original value (in float), but a scalar first operand is converted to the
// tensor's dtype like any operand (torch.mul(0.1, half_x) rounds the 0.1).
PointwiseBody apply_original_second(OpCode op) {
  return [op](PointwiseContext& context) -> std::vector<ir::ValueId> {
    return {context.binary(op, context.rounded(0), context.promoted(1))};
  };
}

// Runs a binary op into `out` (undefined for the functional form) and returns
// the result tensor.
// The CPU kernel's name and dtype coverage, for ATen's NotImplementedError
// ("\"hypot_cpu\" not implemented for 'Long'"). Null name: every dtype.
struct Coverage {
  const char* name = nullptr;
  DTypeSet allowed = kAllTypes;
};

at::Tensor run(const char* op_name, std::string_view key, Config config, const at::Tensor& out,
               const at::Tensor& self, const at::Tensor& other, const PointwiseBody& body,
               Coverage coverage = {}, c10::ArrayRef<c10::Scalar> scalars = {}) {
  at::TensorIterator iter = make_iterator(config, out, self, other);
  if (coverage.name != nullptr) check_dispatch_dtype(coverage.name, dispatch_dtype(iter), coverage.allowed);
  // complex64/complex128 mul, div, eq and ne: the view_as_real lowering (complex_arithmetic.h).
  if (scalars.empty() && run_complex_binary(op_name, key, iter)) return iter.output();
  launch_pointwise(op_name, key, iter, scalars, body);
  return iter.output();
}

// add and sub: self + alpha * other (alpha 1 gets a kernel without the multiply).
at::Tensor run_with_alpha(const char* op_name, OpCode op, const at::Tensor& out,
                          const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  if (op == OpCode::kSubtract) at::native::sub_check(self, other);
  at::TensorBase target = out;
  at::TensorIterator iter = at::TensorIterator::binary_op(target, self, other);
  at::native::alpha_check(iter.common_dtype(), alpha);
  if (run_complex_binary(op_name, op == OpCode::kAdd ? "add" : "sub", iter, alpha)) return iter.output();
  bool unit = alpha.isIntegral(true) ? alpha.toLong() == 1 : alpha.toDouble() == 1.0;
  if (unit) {
    launch_pointwise(op_name, op == OpCode::kAdd ? "add" : "sub", iter, {}, apply_rounded(op));
  } else {
    c10::Scalar scalars[] = {alpha};
    launch_pointwise(op_name, op == OpCode::kAdd ? "add_alpha" : "sub_alpha", iter, scalars,
                     [op](PointwiseContext& context) -> std::vector<ir::ValueId> {
                       ir::ValueId scaled = context.binary(OpCode::kMultiply, context.rounded(1),
                                                           context.scalar_as(0, context.common));
                       return {context.binary(op, context.rounded(0), scaled)};
                     });
  }
  return iter.output();
}

// Division with a rounding mode: none (true division), "trunc" or "floor".
PointwiseBody divide_body(std::optional<c10::string_view> mode) {
  if (!mode.has_value()) return apply_original_second(OpCode::kDivide);
  if (*mode == "floor") return apply_original_second(OpCode::kFloorDivide);
  return [](PointwiseContext& context) -> std::vector<ir::ValueId> {
    ir::ValueId quotient = context.binary(OpCode::kDivide, context.rounded(0), context.promoted(1));
    if (ir::is_floating(context.common) && !context.input_is_scalar[1]) {
      // ATen's CPU kernel divides in the half type itself (c10::Half's operator/
      // rounds), then truncates: round the same way first.
      quotient = context.unary(OpCode::kTrunc, context.builder.cast(quotient, context.common));
    } else if (ir::is_floating(context.common)) {
      // By a CPU scalar it divides in float by the scalar's original value and
      // truncates that (half(0.1) / 0.1 is 0; found by tests/python/op_fuzz.py).
      quotient = context.unary(OpCode::kTrunc, quotient);
    }
    return {quotient};
  };
}

const char* divide_key(std::optional<c10::string_view> mode) {
  if (!mode.has_value()) return "div";
  return *mode == "floor" ? "div_floor" : "div_trunc";
}

void check_rounding_mode(std::optional<c10::string_view> mode) {
  TORCH_CHECK(!mode.has_value() || *mode == "trunc" || *mode == "floor",
              "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
              *mode, "'");
}

at::Tensor run_divide(const char* op_name, const at::Tensor& out, const at::Tensor& self,
                      const at::Tensor& other, std::optional<c10::string_view> mode) {
  check_rounding_mode(mode);
  Config config = mode.has_value() ? Config::kBinary : Config::kFloat;
  Coverage coverage;
  if (mode.has_value()) coverage = {*mode == "floor" ? "div_floor_cpu" : "div_trunc_cpu", kNumericTypes};
  return run(op_name, divide_key(mode), config, out, self, other, divide_body(mode), coverage);
}

}  // namespace

#define KILN_DEFINE_BINARY_WITH_ALPHA(name, opcode)                                            \
  at::Tensor name(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) { \
    return run_with_alpha("aten::" #name ".Tensor", opcode, at::Tensor(), self, other, alpha);  \
  }                                                                                            \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {   \
    run_with_alpha("aten::" #name "_.Tensor", opcode, self, self, other, alpha);               \
    return self;                                                                               \
  }                                                                                            \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& other,                      \
                         const c10::Scalar& alpha, at::Tensor& out) {                          \
    run_with_alpha("aten::" #name ".out", opcode, out, self, other, alpha);                    \
    return out;                                                                                \
  }

// The optional trailing arguments are the CPU kernel's Coverage.
#define KILN_DEFINE_BINARY(name, config, key, body, ...)                                       \
  at::Tensor name(const at::Tensor& self, const at::Tensor& other) {                          \
    return run("aten::" #name ".Tensor", key, config, at::Tensor(), self, other, body,        \
               Coverage{__VA_ARGS__});                                                         \
  }                                                                                           \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& other) {                            \
    run("aten::" #name "_.Tensor", key, config, self, self, other, body, Coverage{__VA_ARGS__}); \
    return self;                                                                              \
  }                                                                                           \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {   \
    run("aten::" #name ".out", key, config, out, self, other, body, Coverage{__VA_ARGS__});    \
    return out;                                                                               \
  }

KILN_DEFINE_BINARY_WITH_ALPHA(add, OpCode::kAdd)
KILN_DEFINE_BINARY_WITH_ALPHA(sub, OpCode::kSubtract)
KILN_DEFINE_BINARY(mul, Config::kBinary, "mul", apply_original_second(OpCode::kMultiply))
KILN_DEFINE_BINARY(div, Config::kFloat, "div", apply_original_second(OpCode::kDivide))
KILN_DEFINE_BINARY(remainder, Config::kBinary, "remainder", apply_rounded(OpCode::kRemainder),
                   "remainder_cpu", kNumericTypes)
KILN_DEFINE_BINARY(fmod, Config::kBinary, "fmod", apply_rounded(OpCode::kFmod), "fmod_cpu", kNumericTypes)
KILN_DEFINE_BINARY(floor_divide, Config::kBinary, "div_floor", apply_original_second(OpCode::kFloorDivide),
                   "div_floor_cpu", kNumericTypes)
KILN_DEFINE_BINARY(pow, Config::kBinary, "pow", apply_rounded(OpCode::kPower), "pow", kNumericTypes)
KILN_DEFINE_BINARY(atan2, Config::kFloat, "atan2", apply(OpCode::kAtan2))
KILN_DEFINE_BINARY(copysign, Config::kFloat, "copysign", apply(OpCode::kCopysign))
KILN_DEFINE_BINARY(hypot, Config::kBinary, "hypot", apply(OpCode::kHypot),
                   "hypot_cpu", kFloatingTypes)
KILN_DEFINE_BINARY(maximum, Config::kBinary, "maximum", apply(OpCode::kMaximum))
KILN_DEFINE_BINARY(minimum, Config::kBinary, "minimum", apply(OpCode::kMinimum))
KILN_DEFINE_BINARY(bitwise_and, Config::kBinary, "bitwise_and", apply(OpCode::kBitwiseAnd),
                   "bitwise_and_cpu", kIntegralTypes | kBoolType)
KILN_DEFINE_BINARY(bitwise_or, Config::kBinary, "bitwise_or", apply(OpCode::kBitwiseOr),
                   "bitwise_or_cpu", kIntegralTypes | kBoolType)
KILN_DEFINE_BINARY(bitwise_xor, Config::kBinary, "bitwise_xor", apply(OpCode::kBitwiseXor),
                   "bitwise_xor_cpu", kIntegralTypes | kBoolType)
KILN_DEFINE_BINARY(bitwise_left_shift, Config::kBinary, "shift_left", apply(OpCode::kShiftLeft),
                   "lshift_cpu", kIntegralTypes)
KILN_DEFINE_BINARY(bitwise_right_shift, Config::kBinary, "shift_right", apply(OpCode::kShiftRight),
                   "rshift_cpu", kIntegralTypes)
KILN_DEFINE_BINARY(eq, Config::kComparison, "eq", apply_rounded(OpCode::kEqual))
KILN_DEFINE_BINARY(ne, Config::kComparison, "ne", apply_rounded(OpCode::kNotEqual))
KILN_DEFINE_BINARY(lt, Config::kComparison, "lt", apply_rounded(OpCode::kLess))
KILN_DEFINE_BINARY(le, Config::kComparison, "le", apply_rounded(OpCode::kLessEqual))
KILN_DEFINE_BINARY(gt, Config::kComparison, "gt", apply_rounded(OpCode::kGreater))
KILN_DEFINE_BINARY(ge, Config::kComparison, "ge", apply_rounded(OpCode::kGreaterEqual))
KILN_DEFINE_BINARY(logical_and, Config::kComparison, "logical_and", apply(OpCode::kLogicalAnd))
KILN_DEFINE_BINARY(logical_or, Config::kComparison, "logical_or", apply(OpCode::kLogicalOr))
KILN_DEFINE_BINARY(logical_xor, Config::kComparison, "logical_xor", apply(OpCode::kLogicalXor))

// Comparisons with a Scalar: the number becomes a wrapped 0-dim CPU tensor,
// as ATen's eq.Scalar meta function wraps it, so it is a launch scalar and
// `x > 0` shares the `x > y` kernel's body.
#define KILN_DEFINE_COMPARISON_SCALAR(name, op)                                                 \
  at::Tensor name##_scalar(const at::Tensor& self, const c10::Scalar& other) {                \
    return run("aten::" #name ".Scalar", #name, Config::kComparison, at::Tensor(), self,       \
               at::native::wrapped_scalar_tensor(other), apply_rounded(op));     \
  }                                                                                           \
  at::Tensor& name##_scalar_(at::Tensor& self, const c10::Scalar& other) {                    \
    run("aten::" #name "_.Scalar", #name, Config::kComparison, self, self,                    \
        at::native::wrapped_scalar_tensor(other), apply_rounded(op));            \
    return self;                                                                              \
  }                                                                                           \
  at::Tensor& name##_scalar_out(const at::Tensor& self, const c10::Scalar& other,             \
                                at::Tensor& out) {                                            \
    run("aten::" #name ".Scalar_out", #name, Config::kComparison, out, self,                  \
        at::native::wrapped_scalar_tensor(other), apply_rounded(op));            \
    return out;                                                                               \
  }

KILN_DEFINE_COMPARISON_SCALAR(eq, OpCode::kEqual)
KILN_DEFINE_COMPARISON_SCALAR(ne, OpCode::kNotEqual)
KILN_DEFINE_COMPARISON_SCALAR(lt, OpCode::kLess)
KILN_DEFINE_COMPARISON_SCALAR(le, OpCode::kLessEqual)
KILN_DEFINE_COMPARISON_SCALAR(gt, OpCode::kGreater)
KILN_DEFINE_COMPARISON_SCALAR(ge, OpCode::kGreaterEqual)

#undef KILN_DEFINE_COMPARISON_SCALAR

// `2 % x`: remainder with a Scalar dividend, the number a launch scalar.
at::Tensor remainder_scalar_tensor(const c10::Scalar& self, const at::Tensor& other) {
  return run("aten::remainder.Scalar_Tensor", "remainder", Config::kBinary, at::Tensor(),
             at::native::wrapped_scalar_tensor(self), other, apply_rounded(OpCode::kRemainder),
             Coverage{"remainder_cpu", kNumericTypes});
}

// The Python operators << and >> (and <<=, >>=): ATen's lshift/rshift, the
// same kernels as bitwise_left_shift/bitwise_right_shift.
#define KILN_DEFINE_SHIFT_OPERATOR(name, inplace_name, aten_name, aten_inplace_name, key, opcode, \
                                   cpu_name)                                                   \
  at::Tensor name##_tensor(const at::Tensor& self, const at::Tensor& other) {                   \
    return run("aten::" aten_name ".Tensor", key, Config::kBinary, at::Tensor(), self, other,        \
               apply(opcode), Coverage{cpu_name, kIntegralTypes});                              \
  }                                                                                             \
  at::Tensor name##_scalar(const at::Tensor& self, const c10::Scalar& other) {                  \
    return run("aten::" aten_name ".Scalar", key, Config::kBinary, at::Tensor(), self,               \
               at::native::wrapped_scalar_tensor(other), apply(opcode),                          \
               Coverage{cpu_name, kIntegralTypes});                                             \
  }                                                                                             \
  at::Tensor& inplace_name##_tensor(at::Tensor& self, const at::Tensor& other) {                \
    run("aten::" aten_inplace_name ".Tensor", key, Config::kBinary, self, self, other, apply(opcode), \
        Coverage{cpu_name, kIntegralTypes});                                                    \
    return self;                                                                                \
  }                                                                                             \
  at::Tensor& inplace_name##_scalar(at::Tensor& self, const c10::Scalar& other) {               \
    run("aten::" aten_inplace_name ".Scalar", key, Config::kBinary, self, self,                     \
        at::native::wrapped_scalar_tensor(other), apply(opcode), Coverage{cpu_name, kIntegralTypes}); \
    return self;                                                                                \
  }

KILN_DEFINE_SHIFT_OPERATOR(lshift, ilshift, "__lshift__", "__ilshift__", "shift_left", OpCode::kShiftLeft, "lshift_cpu")
KILN_DEFINE_SHIFT_OPERATOR(rshift, irshift, "__rshift__", "__irshift__", "shift_right", OpCode::kShiftRight, "rshift_cpu")

#undef KILN_DEFINE_SHIFT_OPERATOR

at::Tensor div_mode(const at::Tensor& self, const at::Tensor& other,
                    std::optional<c10::string_view> rounding_mode) {
  return run_divide("aten::div.Tensor_mode", at::Tensor(), self, other, rounding_mode);
}

at::Tensor& div_mode_(at::Tensor& self, const at::Tensor& other,
                      std::optional<c10::string_view> rounding_mode) {
  run_divide("aten::div_.Tensor_mode", self, self, other, rounding_mode);
  return self;
}

at::Tensor& div_mode_out(const at::Tensor& self, const at::Tensor& other,
                         std::optional<c10::string_view> rounding_mode, at::Tensor& out) {
  run_divide("aten::div.out_mode", out, self, other, rounding_mode);
  return out;
}

}  // namespace kiln::torch_integration::compiled
