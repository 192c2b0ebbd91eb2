// Activations: ATen's meta function (or, for the unstructured ones, its
// TensorIterator config), then the CPU kernel's formula in IR.
#include "kiln/aten/compiled/pointwise/activation_ops.h"

#include <ATen/TensorIterator.h>
#include <ATen/ops/elu_backward_meta.h>
#include <ATen/ops/elu_meta.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/gelu_backward_meta.h>
#include <ATen/ops/gelu_meta.h>
#include <ATen/ops/hardsigmoid_backward_meta.h>
#include <ATen/ops/hardsigmoid_meta.h>
#include <ATen/ops/leaky_relu_backward_meta.h>
#include <ATen/ops/leaky_relu_meta.h>
#include <ATen/ops/mish_meta.h>
#include <ATen/ops/sigmoid_backward_meta.h>
#include <ATen/ops/silu_backward_meta.h>
#include <ATen/ops/silu_meta.h>
#include <ATen/ops/softplus_backward_meta.h>
#include <ATen/ops/softplus_meta.h>
#include <ATen/ops/tanh_backward_meta.h>
#include <ATen/ops/threshold_backward_meta.h>
#include <ATen/ops/threshold_meta.h>

#include <cmath>
#include <initializer_list>

#include "kiln/aten/compiled/pointwise/clamp_ops.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

// Arithmetic in the common dtype, written as formulas read.
struct Math {
  PointwiseContext& context;

  ValueId constant(double value) { return context.constant(value); }
  ValueId scalar(int slot) { return context.scalar_as(slot, context.common); }
  ValueId add(ValueId a, ValueId b) { return context.binary(OpCode::kAdd, a, b); }
  ValueId sub(ValueId a, ValueId b) { return context.binary(OpCode::kSubtract, a, b); }
  ValueId mul(ValueId a, ValueId b) { return context.binary(OpCode::kMultiply, a, b); }
  ValueId div(ValueId a, ValueId b) { return context.binary(OpCode::kDivide, a, b); }
  ValueId max(ValueId a, ValueId b) { return context.binary(OpCode::kMaximum, a, b); }
  ValueId min(ValueId a, ValueId b) { return context.binary(OpCode::kMinimum, a, b); }
  ValueId less(ValueId a, ValueId b) { return context.binary(OpCode::kLess, a, b); }
  ValueId less_equal(ValueId a, ValueId b) { return context.binary(OpCode::kLessEqual, a, b); }
  ValueId greater(ValueId a, ValueId b) { return context.binary(OpCode::kGreater, a, b); }
  ValueId greater_equal(ValueId a, ValueId b) { return context.binary(OpCode::kGreaterEqual, a, b); }
  ValueId either(ValueId a, ValueId b) { return context.binary(OpCode::kLogicalOr, a, b); }
  ValueId both(ValueId a, ValueId b) { return context.binary(OpCode::kLogicalAnd, a, b); }
  ValueId apply(OpCode op, ValueId x) { return context.unary(op, x); }
  ValueId select(ValueId condition, ValueId a, ValueId b) {
    return context.builder.select(condition, a, b);
  }
  // 1 / (1 + exp(-x)), as the CPU's silu kernels write it.
  ValueId sigmoid(ValueId x) {
    return div(constant(1.0), add(constant(1.0), apply(OpCode::kExp, apply(OpCode::kNegate, x))));
  }
};

// A body over Math with input i in the common dtype.
template <typename Formula>
PointwiseBody formula(Formula compute) {
  return [compute](PointwiseContext& context) -> std::vector<ValueId> {
    Math math{context};
    return {compute(math, context)};
  };
}

ValueId input(PointwiseContext& context, int index) { return context.promoted(index); }

// Checks the dispatch dtype, converts the scalars to its opmath type as the
// CPU kernels do, launches.
void launch_activation(const char* op_name, const char* key, DTypeSet allowed,
                       at::TensorIteratorBase& iter, std::initializer_list<c10::Scalar> scalars,
                       const PointwiseBody& body) {
  c10::ScalarType type = dispatch_dtype(iter);
  check_dispatch_dtype(key, type, allowed);
  c10::SmallVector<c10::Scalar, 4> converted;
  for (const c10::Scalar& value : scalars) converted.push_back(scalar_as_opmath(value, type));
  launch_rounded(op_name, key, iter, converted, body);
}

// meta(arguments...), then launch_activation.
template <typename Meta, typename... Arguments>
const at::Tensor& run(const char* op_name, const char* key, DTypeSet allowed,
                      StructuredIterator<Meta>& iter, std::initializer_list<c10::Scalar> scalars,
                      const PointwiseBody& body, const Arguments&... arguments) {
  iter.meta(arguments...);
  launch_activation(op_name, key, allowed, iter, scalars, body);
  return iter.result();
}

// ---- formulas ----

const PointwiseBody& threshold_body() {
  // x <= threshold ? value : x (inputs: self, self; the kernel reads one).
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId x = input(c, 0);
    return m.select(m.less_equal(x, m.scalar(0)), m.scalar(1), x);
  });
  return body;
}

const PointwiseBody& threshold_backward_body() {
  // self <= threshold ? 0 : grad (inputs: self, grad).
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    return m.select(m.less_equal(input(c, 0), m.scalar(0)), m.constant(0.0), input(c, 1));
  });
  return body;
}

constexpr double kSqrtHalf = 0.70710678118654752440;        // M_SQRT1_2
constexpr double kSqrtTwoOverPi = 0.79788456080286535588;   // M_SQRT2 * M_2_SQRTPI * 0.5
constexpr double kInverseSqrtTwoPi = 0.39894228040143267794;  // M_2_SQRTPI * M_SQRT1_2 * 0.5
constexpr double kKappa = 0.044715;

// The check is in ATen's kernels, not in gelu's meta function.
bool is_tanh_approximation(c10::string_view approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh",
              "approximate argument must be either none or tanh.");
  return approximate == "tanh";
}

PointwiseBody gelu_body(bool tanh_approximation) {
  if (tanh_approximation) {
    // 0.5 * x * (1 + tanh(beta * (x + kappa * x^3)))
    return formula([](Math& m, PointwiseContext& c) {
      ValueId x = input(c, 0);
      ValueId cube = m.mul(m.mul(x, x), x);
      ValueId inner = m.mul(m.constant(kSqrtTwoOverPi), m.add(x, m.mul(m.constant(kKappa), cube)));
      return m.mul(m.mul(m.constant(0.5), x), m.add(m.constant(1.0), m.apply(OpCode::kTanh, inner)));
    });
  }
  // x * 0.5 * (1 + erf(x / sqrt(2)))
  return formula([](Math& m, PointwiseContext& c) {
    ValueId x = input(c, 0);
    ValueId error = m.apply(OpCode::kErf, m.mul(x, m.constant(kSqrtHalf)));
    return m.mul(m.mul(x, m.constant(0.5)), m.add(m.constant(1.0), error));
  });
}

PointwiseBody gelu_backward_body(bool tanh_approximation) {
  if (tanh_approximation) {
    return formula([](Math& m, PointwiseContext& c) {
      ValueId gradient = input(c, 0);
      ValueId x = input(c, 1);
      ValueId square = m.mul(x, x);
      ValueId cube = m.mul(square, x);
      ValueId inner = m.mul(m.constant(kSqrtTwoOverPi), m.add(x, m.mul(m.constant(kKappa), cube)));
      ValueId tanh_inner = m.apply(OpCode::kTanh, inner);
      ValueId left = m.mul(m.constant(0.5), x);
      ValueId right = m.add(m.constant(1.0), tanh_inner);
      ValueId left_derivative = m.mul(m.constant(0.5), right);
      ValueId tanh_derivative = m.sub(m.constant(1.0), m.mul(tanh_inner, tanh_inner));
      ValueId inner_derivative = m.mul(
          m.constant(kSqrtTwoOverPi),
          m.add(m.constant(1.0), m.mul(m.mul(m.constant(3.0), m.constant(kKappa)), square)));
      ValueId right_derivative = m.mul(m.mul(left, tanh_derivative), inner_derivative);
      return m.mul(gradient, m.add(left_derivative, right_derivative));
    });
  }
  // dy * (cdf + x * pdf)
  return formula([](Math& m, PointwiseContext& c) {
    ValueId gradient = input(c, 0);
    ValueId x = input(c, 1);
    ValueId cdf = m.mul(m.constant(0.5),
                        m.add(m.constant(1.0), m.apply(OpCode::kErf, m.mul(x, m.constant(kSqrtHalf)))));
    ValueId pdf = m.mul(m.constant(kInverseSqrtTwoPi),
                        m.apply(OpCode::kExp, m.mul(m.mul(x, x), m.constant(-0.5))));
    return m.mul(gradient, m.add(cdf, m.mul(x, pdf)));
  });
}

const PointwiseBody& silu_body() {
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId x = input(c, 0);
    return m.div(x, m.add(m.constant(1.0), m.apply(OpCode::kExp, m.apply(OpCode::kNegate, x))));
  });
  return body;
}

const PointwiseBody& silu_backward_body() {
  // dy * s * (1 + x * (1 - s)), s = sigmoid(x)
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId gradient = input(c, 0);
    ValueId x = input(c, 1);
    ValueId s = m.sigmoid(x);
    return m.mul(m.mul(gradient, s), m.add(m.constant(1.0), m.mul(x, m.sub(m.constant(1.0), s))));
  });
  return body;
}

const PointwiseBody& sigmoid_backward_body() {
  // grad * (1 - y) * y. The CPU computes float16 (not bfloat16) in float16
  // arithmetic, each operation rounded: so does this kernel.
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    auto round = [&](ValueId value) {
      return c.common == ir::DType::kFloat16 ? c.builder.cast(value, ir::DType::kFloat16) : value;
    };
    ValueId y = input(c, 1);
    return m.mul(round(m.mul(input(c, 0), round(m.sub(m.constant(1.0), y)))), y);
  });
  return body;
}

const PointwiseBody& tanh_backward_body() {
  // grad * (1 - y * y)
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId y = input(c, 1);
    return m.mul(input(c, 0), m.sub(m.constant(1.0), m.mul(y, y)));
  });
  return body;
}

const PointwiseBody& mish_body() {
  // x * tanh(log1p(exp(x)))
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId x = input(c, 0);
    ValueId softplus = m.apply(OpCode::kLog1p, m.apply(OpCode::kExp, x));
    return m.mul(x, m.apply(OpCode::kTanh, softplus));
  });
  return body;
}

// min(max(x + 3, 0), 6): NaN-propagating, as the CPU's vector kernels.
ValueId relu6_of_shifted(Math& m, ValueId x) {
  return m.min(m.max(m.add(x, m.constant(3.0)), m.constant(0.0)), m.constant(6.0));
}

const PointwiseBody& hardsigmoid_body() {
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    return m.div(relu6_of_shifted(m, input(c, 0)), m.constant(6.0));
  });
  return body;
}

const PointwiseBody& hardsigmoid_backward_body() {
  // -3 < x < 3 ? grad / 6 : 0 (inputs: grad, self)
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId x = input(c, 1);
    ValueId inside = m.both(m.greater(x, m.constant(-3.0)), m.less(x, m.constant(3.0)));
    return m.select(inside, m.mul(input(c, 0), m.constant(1.0 / 6.0)), m.constant(0.0));
  });
  return body;
}

const PointwiseBody& hardswish_body() {
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId x = input(c, 0);
    return m.div(m.mul(x, relu6_of_shifted(m, x)), m.constant(6.0));
  });
  return body;
}

const PointwiseBody& hardswish_backward_body() {
  // x <= -3 ? 0 : x < 3 ? grad * (x / 3 + 0.5) : grad (inputs: grad, self);
  // at -3 and 3 exactly the CPU takes the outer pieces.
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId gradient = input(c, 0);
    ValueId x = input(c, 1);
    ValueId slope = m.add(m.div(x, m.constant(3.0)), m.constant(0.5));
    ValueId middle = m.select(m.less(x, m.constant(3.0)), m.mul(gradient, slope), gradient);
    return m.select(m.less_equal(x, m.constant(-3.0)), m.constant(0.0), middle);
  });
  return body;
}

const PointwiseBody& leaky_relu_body() {
  // x > 0 ? x : x * slope
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId x = input(c, 0);
    return m.select(m.greater(x, m.constant(0.0)), x, m.mul(x, m.scalar(0)));
  });
  return body;
}

const PointwiseBody& leaky_relu_backward_body() {
  // self > 0 ? grad : grad * slope (inputs: self, grad)
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId gradient = input(c, 1);
    return m.select(m.greater(input(c, 0), m.constant(0.0)), gradient,
                    m.mul(gradient, m.scalar(0)));
  });
  return body;
}

const PointwiseBody& hardtanh_backward_body() {
  // self <= min || self >= max ? 0 : grad (inputs: grad, self)
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId x = input(c, 1);
    ValueId outside = m.either(m.less_equal(x, m.scalar(0)), m.greater_equal(x, m.scalar(1)));
    return m.select(outside, m.constant(0.0), input(c, 0));
  });
  return body;
}

// Scalars: alpha, scale, input_scale. negcoef = alpha * scale, poscoef = scale.
const PointwiseBody& elu_body() {
  // x <= 0 ? expm1(x * input_scale) * negcoef : x * poscoef
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId x = input(c, 0);
    ValueId negative_coefficient = m.mul(m.scalar(0), m.scalar(1));
    ValueId negative = m.mul(m.apply(OpCode::kExpm1, m.mul(x, m.scalar(2))), negative_coefficient);
    return m.select(m.less_equal(x, m.constant(0.0)), negative, m.mul(x, m.scalar(1)));
  });
  return body;
}

PointwiseBody elu_backward_body(bool is_result) {
  // inputs: grad, self_or_result (b)
  return formula([is_result](Math& m, PointwiseContext& c) {
    ValueId gradient = input(c, 0);
    ValueId b = input(c, 1);
    ValueId negative_coefficient = m.mul(m.scalar(0), m.scalar(1));
    ValueId input_scale = m.scalar(2);
    ValueId negative =
        is_result
            ? m.mul(m.mul(gradient, input_scale), m.add(b, negative_coefficient))
            : m.mul(m.mul(m.mul(gradient, input_scale), negative_coefficient),
                    m.apply(OpCode::kExp, m.mul(b, input_scale)));
    return m.select(m.less_equal(b, m.constant(0.0)), negative, m.mul(gradient, m.scalar(1)));
  });
}

const PointwiseBody& softplus_body() {
  // x * beta > threshold ? x : log1p(exp(x * beta)) / beta
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId x = input(c, 0);
    ValueId scaled = m.mul(x, m.scalar(0));
    ValueId smooth = m.div(m.apply(OpCode::kLog1p, m.apply(OpCode::kExp, scaled)), m.scalar(0));
    return m.select(m.greater(scaled, m.scalar(1)), x, smooth);
  });
  return body;
}

const PointwiseBody& softplus_backward_body() {
  // z = exp(x * beta); x * beta > threshold ? grad : grad * z / (z + 1)
  static const PointwiseBody body = formula([](Math& m, PointwiseContext& c) {
    ValueId gradient = input(c, 0);
    ValueId scaled = m.mul(input(c, 1), m.scalar(0));
    ValueId z = m.apply(OpCode::kExp, scaled);
    ValueId smooth = m.div(m.mul(gradient, z), m.add(z, m.constant(1.0)));
    return m.select(m.greater(scaled, m.scalar(1)), gradient, smooth);
  });
  return body;
}

// hardswish and hardtanh_backward are not structured: the CPU builds these
// iterators itself.
at::Tensor run_unary_iterator(const char* op_name, const char* key, const at::Tensor& out,
                              const at::Tensor& self, const PointwiseBody& body) {
  at::TensorBase target = out;
  at::TensorIterator iter = at::TensorIterator::unary_op(target, self);
  launch_activation(op_name, key, kFloatingTypes, iter, {}, body);
  return iter.output();
}

at::Tensor run_binary_iterator(const char* op_name, const char* key, const at::Tensor& out,
                               const at::Tensor& grad_output, const at::Tensor& self,
                               std::initializer_list<c10::Scalar> scalars,
                               const PointwiseBody& body) {
  at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(out, grad_output, self);
  launch_activation(op_name, key, kFloatingTypes, iter, scalars, body);
  return iter.output();
}

// hardtanh's bounds: integers for integer inputs (legacy: no promotion by the
// bounds), and no negative bounds for uint8.
std::pair<c10::Scalar, c10::Scalar> hardtanh_bounds(const at::Tensor& self,
                                                    const c10::Scalar& min_val,
                                                    const c10::Scalar& max_val) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::ScalarType::Bool,
                              "Bool inputs not supported for hardtanh");
  if (!c10::isIntegralType(self.scalar_type(), /*includeBool=*/false)) return {min_val, max_val};
  int64_t lower = min_val.toLong();
  int64_t upper = max_val.toLong();
  TORCH_CHECK(self.scalar_type() != c10::ScalarType::Byte || (lower >= 0 && upper >= 0),
              "cannot do hardtanh on an unsigned type with negative limits");
  return {lower, upper};
}

}  // namespace

// ---- relu, hardtanh: clamps ----

at::Tensor relu(const at::Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::ScalarType::Bool,
                              "Boolean inputs not supported for relu");
  return clamp_min_as("aten::relu", self, 0, at::Tensor(), false);
}

at::Tensor& relu_(at::Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::ScalarType::Bool,
                              "Boolean inputs not supported for relu");
  clamp_min_as("aten::relu_", self, 0, self, true);
  return self;
}

at::Tensor hardtanh(const at::Tensor& self, const c10::Scalar& min_val, const c10::Scalar& max_val) {
  auto [lower, upper] = hardtanh_bounds(self, min_val, max_val);
  at::Tensor result = at::empty_like(self);
  clamp_as("aten::hardtanh", self, lower, upper, result, false);
  return result;
}

at::Tensor& hardtanh_(at::Tensor& self, const c10::Scalar& min_val, const c10::Scalar& max_val) {
  auto [lower, upper] = hardtanh_bounds(self, min_val, max_val);
  clamp_as("aten::hardtanh_", self, lower, upper, self, true);
  return self;
}

at::Tensor& hardtanh_out(const at::Tensor& self, const c10::Scalar& min_val,
                         const c10::Scalar& max_val, at::Tensor& out) {
  auto [lower, upper] = hardtanh_bounds(self, min_val, max_val);
  clamp_as("aten::hardtanh.out", self, lower, upper, out, false);
  return out;
}

at::Tensor hardtanh_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const c10::Scalar& min_val, const c10::Scalar& max_val) {
  return run_binary_iterator("aten::hardtanh_backward", "hardtanh_backward", at::Tensor(),
                             grad_output, self, {min_val, max_val}, hardtanh_backward_body());
}

at::Tensor& hardtanh_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const c10::Scalar& min_val, const c10::Scalar& max_val,
                                  at::Tensor& grad_input) {
  run_binary_iterator("aten::hardtanh_backward.grad_input", "hardtanh_backward", grad_input,
                      grad_output, self, {min_val, max_val}, hardtanh_backward_body());
  return grad_input;
}

// ---- structured activations ----


// ATen's CPU kernel converts `value` to the tensor's dtype with its overflow
// check (the threshold only to the compute type): a value float16 cannot hold
// raises (found by tests/python/op_fuzz.py).
template <typename Meta>
const at::Tensor& run_threshold(const char* op_name, StructuredIterator<Meta>& iter, const at::Tensor& self,
                                const c10::Scalar& threshold, const c10::Scalar& value) {
  iter.meta(self, threshold, value);
  const c10::ScalarType type = dispatch_dtype(iter);
  if (!c10::isComplexType(type)) scalar_as(value, type);
  launch_activation(op_name, "threshold", kNumericTypes, iter, {threshold, value}, threshold_body());
  return iter.result();
}

at::Tensor threshold(const at::Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value) {
  KILN_STRUCTURED(threshold) iter;
  return run_threshold("aten::threshold", iter, self, threshold, value);
}

at::Tensor& threshold_(at::Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value) {
  KILN_STRUCTURED(threshold) iter(self, Target::kInPlace);
  run_threshold("aten::threshold_", iter, self, threshold, value);
  return self;
}

at::Tensor& threshold_out(const at::Tensor& self, const c10::Scalar& threshold,
                          const c10::Scalar& value, at::Tensor& out) {
  KILN_STRUCTURED(threshold) iter(out, Target::kOut);
  run_threshold("aten::threshold.out", iter, self, threshold, value);
  return out;
}

at::Tensor threshold_backward(const at::Tensor& grad_output, const at::Tensor& self,
                              const c10::Scalar& threshold) {
  KILN_STRUCTURED(threshold_backward) iter;
  return run("aten::threshold_backward", "threshold_backward", kNumericTypes, iter, {threshold},
             threshold_backward_body(), grad_output, self, threshold);
}

at::Tensor& threshold_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                   const c10::Scalar& threshold, at::Tensor& grad_input) {
  KILN_STRUCTURED(threshold_backward) iter(grad_input, Target::kOut);
  run("aten::threshold_backward.grad_input", "threshold_backward", kNumericTypes, iter,
      {threshold}, threshold_backward_body(), grad_output, self, threshold);
  return grad_input;
}

at::Tensor gelu(const at::Tensor& self, c10::string_view approximate) {
  KILN_STRUCTURED(gelu) iter;
  bool tanh = is_tanh_approximation(approximate);
  return run("aten::gelu", tanh ? "gelu_tanh" : "gelu", kFloatingTypes, iter, {}, gelu_body(tanh),
             self, approximate);
}

at::Tensor& gelu_(at::Tensor& self, c10::string_view approximate) {
  KILN_STRUCTURED(gelu) iter(self, Target::kInPlace);
  bool tanh = is_tanh_approximation(approximate);
  run("aten::gelu_", tanh ? "gelu_tanh" : "gelu", kFloatingTypes, iter, {}, gelu_body(tanh), self,
      approximate);
  return self;
}

at::Tensor& gelu_out(const at::Tensor& self, c10::string_view approximate, at::Tensor& out) {
  KILN_STRUCTURED(gelu) iter(out, Target::kOut);
  bool tanh = is_tanh_approximation(approximate);
  run("aten::gelu.out", tanh ? "gelu_tanh" : "gelu", kFloatingTypes, iter, {}, gelu_body(tanh),
      self, approximate);
  return out;
}

at::Tensor gelu_backward(const at::Tensor& grad_output, const at::Tensor& self,
                         c10::string_view approximate) {
  KILN_STRUCTURED(gelu_backward) iter;
  bool tanh = is_tanh_approximation(approximate);
  return run("aten::gelu_backward", tanh ? "gelu_tanh_backward" : "gelu_backward", kFloatingTypes,
             iter, {}, gelu_backward_body(tanh), grad_output, self, approximate);
}

at::Tensor& gelu_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                              c10::string_view approximate, at::Tensor& grad_input) {
  KILN_STRUCTURED(gelu_backward) iter(grad_input, Target::kOut);
  bool tanh = is_tanh_approximation(approximate);
  run("aten::gelu_backward.grad_input", tanh ? "gelu_tanh_backward" : "gelu_backward",
      kFloatingTypes, iter, {}, gelu_backward_body(tanh), grad_output, self, approximate);
  return grad_input;
}

#define KILN_DEFINE_ACTIVATION(name)                                                             \
  at::Tensor name(const at::Tensor& self) {                                                      \
    KILN_STRUCTURED(name) iter;                                                                  \
    return run("aten::" #name, #name, kFloatingTypes, iter, {}, name##_body(), self);            \
  }                                                                                              \
  at::Tensor& name##_(at::Tensor& self) {                                                        \
    KILN_STRUCTURED(name) iter(self, Target::kInPlace);                                          \
    run("aten::" #name "_", #name, kFloatingTypes, iter, {}, name##_body(), self);               \
    return self;                                                                                 \
  }                                                                                              \
  at::Tensor& name##_out(const at::Tensor& self, at::Tensor& out) {                              \
    KILN_STRUCTURED(name) iter(out, Target::kOut);                                               \
    run("aten::" #name ".out", #name, kFloatingTypes, iter, {}, name##_body(), self);            \
    return out;                                                                                  \
  }

#define KILN_DEFINE_BACKWARD(name)                                                               \
  at::Tensor name(const at::Tensor& grad_output, const at::Tensor& other) {                      \
    KILN_STRUCTURED(name) iter;                                                                  \
    return run("aten::" #name, #name, kFloatingTypes, iter, {}, name##_body(), grad_output,      \
               other);                                                                           \
  }                                                                                              \
  at::Tensor& name##_out(const at::Tensor& grad_output, const at::Tensor& other,                 \
                         at::Tensor& grad_input) {                                               \
    KILN_STRUCTURED(name) iter(grad_input, Target::kOut);                                        \
    run("aten::" #name ".grad_input", #name, kFloatingTypes, iter, {}, name##_body(),            \
        grad_output, other);                                                                     \
    return grad_input;                                                                           \
  }

KILN_DEFINE_ACTIVATION(silu)
KILN_DEFINE_ACTIVATION(mish)
KILN_DEFINE_ACTIVATION(hardsigmoid)
KILN_DEFINE_BACKWARD(silu_backward)
KILN_DEFINE_BACKWARD(sigmoid_backward)
KILN_DEFINE_BACKWARD(tanh_backward)
KILN_DEFINE_BACKWARD(hardsigmoid_backward)

#undef KILN_DEFINE_ACTIVATION
#undef KILN_DEFINE_BACKWARD

// hardswish: not structured.
at::Tensor hardswish(const at::Tensor& self) {
  return run_unary_iterator("aten::hardswish", "hardswish", at::Tensor(), self, hardswish_body());
}

at::Tensor& hardswish_(at::Tensor& self) {
  run_unary_iterator("aten::hardswish_", "hardswish", self, self, hardswish_body());
  return self;
}

at::Tensor& hardswish_out(const at::Tensor& self, at::Tensor& out) {
  run_unary_iterator("aten::hardswish.out", "hardswish", out, self, hardswish_body());
  return out;
}

at::Tensor hardswish_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  return run_binary_iterator("aten::hardswish_backward", "hardswish_backward", at::Tensor(),
                             grad_output, self, {}, hardswish_backward_body());
}

at::Tensor& hardswish_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                   at::Tensor& grad_input) {
  run_binary_iterator("aten::hardswish_backward.out", "hardswish_backward", grad_input,
                      grad_output, self, {}, hardswish_backward_body());
  return grad_input;
}

at::Tensor leaky_relu(const at::Tensor& self, const c10::Scalar& negative_slope) {
  KILN_STRUCTURED(leaky_relu) iter;
  return run("aten::leaky_relu", "leaky_relu", kFloatingTypes, iter, {negative_slope},
             leaky_relu_body(), self, negative_slope);
}

at::Tensor& leaky_relu_(at::Tensor& self, const c10::Scalar& negative_slope) {
  KILN_STRUCTURED(leaky_relu) iter(self, Target::kInPlace);
  run("aten::leaky_relu_", "leaky_relu", kFloatingTypes, iter, {negative_slope},
      leaky_relu_body(), self, negative_slope);
  return self;
}

at::Tensor& leaky_relu_out(const at::Tensor& self, const c10::Scalar& negative_slope,
                           at::Tensor& out) {
  KILN_STRUCTURED(leaky_relu) iter(out, Target::kOut);
  run("aten::leaky_relu.out", "leaky_relu", kFloatingTypes, iter, {negative_slope},
      leaky_relu_body(), self, negative_slope);
  return out;
}

at::Tensor leaky_relu_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               const c10::Scalar& negative_slope, bool self_is_result) {
  KILN_STRUCTURED(leaky_relu_backward) iter;
  return run("aten::leaky_relu_backward", "leaky_relu_backward", kFloatingTypes, iter,
             {negative_slope}, leaky_relu_backward_body(), grad_output, self, negative_slope,
             self_is_result);
}

at::Tensor& leaky_relu_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    const c10::Scalar& negative_slope, bool self_is_result,
                                    at::Tensor& grad_input) {
  KILN_STRUCTURED(leaky_relu_backward) iter(grad_input, Target::kOut);
  run("aten::leaky_relu_backward.grad_input", "leaky_relu_backward", kFloatingTypes, iter,
      {negative_slope}, leaky_relu_backward_body(), grad_output, self, negative_slope,
      self_is_result);
  return grad_input;
}

at::Tensor elu(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
               const c10::Scalar& input_scale) {
  KILN_STRUCTURED(elu) iter;
  return run("aten::elu", "elu", kFloatingTypes, iter, {alpha, scale, input_scale}, elu_body(),
             self, alpha, scale, input_scale);
}

at::Tensor& elu_(at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                 const c10::Scalar& input_scale) {
  KILN_STRUCTURED(elu) iter(self, Target::kInPlace);
  run("aten::elu_", "elu", kFloatingTypes, iter, {alpha, scale, input_scale}, elu_body(), self,
      alpha, scale, input_scale);
  return self;
}

at::Tensor& elu_out(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                    const c10::Scalar& input_scale, at::Tensor& out) {
  KILN_STRUCTURED(elu) iter(out, Target::kOut);
  run("aten::elu.out", "elu", kFloatingTypes, iter, {alpha, scale, input_scale}, elu_body(), self,
      alpha, scale, input_scale);
  return out;
}

at::Tensor elu_backward(const at::Tensor& grad_output, const c10::Scalar& alpha,
                        const c10::Scalar& scale, const c10::Scalar& input_scale, bool is_result,
                        const at::Tensor& self_or_result) {
  KILN_STRUCTURED(elu_backward) iter;
  return run("aten::elu_backward", is_result ? "elu_backward_result" : "elu_backward",
             kFloatingTypes, iter, {alpha, scale, input_scale}, elu_backward_body(is_result),
             grad_output, alpha, scale, input_scale, is_result, self_or_result);
}

at::Tensor& elu_backward_out(const at::Tensor& grad_output, const c10::Scalar& alpha,
                             const c10::Scalar& scale, const c10::Scalar& input_scale,
                             bool is_result, const at::Tensor& self_or_result,
                             at::Tensor& grad_input) {
  KILN_STRUCTURED(elu_backward) iter(grad_input, Target::kOut);
  run("aten::elu_backward.grad_input", is_result ? "elu_backward_result" : "elu_backward",
      kFloatingTypes, iter, {alpha, scale, input_scale}, elu_backward_body(is_result), grad_output,
      alpha, scale, input_scale, is_result, self_or_result);
  return grad_input;
}

at::Tensor softplus(const at::Tensor& self, const c10::Scalar& beta, const c10::Scalar& threshold) {
  KILN_STRUCTURED(softplus) iter;
  return run("aten::softplus", "softplus", kFloatingTypes, iter, {beta, threshold},
             softplus_body(), self, beta, threshold);
}

at::Tensor& softplus_out(const at::Tensor& self, const c10::Scalar& beta,
                         const c10::Scalar& threshold, at::Tensor& out) {
  KILN_STRUCTURED(softplus) iter(out, Target::kOut);
  run("aten::softplus.out", "softplus", kFloatingTypes, iter, {beta, threshold}, softplus_body(),
      self, beta, threshold);
  return out;
}

at::Tensor softplus_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const c10::Scalar& beta, const c10::Scalar& threshold) {
  KILN_STRUCTURED(softplus_backward) iter;
  return run("aten::softplus_backward", "softplus_backward", kFloatingTypes, iter,
             {beta, threshold}, softplus_backward_body(), grad_output, self, beta, threshold);
}

at::Tensor& softplus_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const c10::Scalar& beta, const c10::Scalar& threshold,
                                  at::Tensor& grad_input) {
  KILN_STRUCTURED(softplus_backward) iter(grad_input, Target::kOut);
  run("aten::softplus_backward.grad_input", "softplus_backward", kFloatingTypes, iter,
      {beta, threshold}, softplus_backward_body(), grad_output, self, beta, threshold);
  return grad_input;
}


}  // namespace kiln::torch_integration::compiled
