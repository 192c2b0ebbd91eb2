// Unary extras: the meta function (structured ops) or the TensorIterator the
// CPU builds (the others), the CPU kernel's dtype coverage and scalar
// conversion, then its formula in IR.
#include "kiln/aten/compiled/pointwise/unary_extra_ops.h"

#include <ATen/TensorIterator.h>
#include <ATen/ops/hardshrink_backward_meta.h>
#include <ATen/ops/hardshrink_meta.h>
#include <ATen/ops/logit_backward_meta.h>
#include <ATen/ops/signbit_meta.h>
#include <ATen/ops/sinc_meta.h>
#include <ATen/ops/softshrink_backward_meta.h>
#include <ATen/ops/softshrink_meta.h>
#include <ATen/ops/special_entr_meta.h>

#include <cmath>
#include <initializer_list>
#include <limits>

#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

constexpr double kPi = 3.14159265358979323846;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

ValueId select(PointwiseContext& c, ValueId condition, ValueId a, ValueId b) {
  return c.builder.select(condition, a, b);
}

// sinc: 1 at 0, else sin(pi x) / (pi x).
std::vector<ValueId> sinc_body(PointwiseContext& c) {
  ValueId x = c.promoted(0);
  ValueId product = c.binary(OpCode::kMultiply, c.constant(kPi), x);
  ValueId ratio = c.binary(OpCode::kDivide, c.unary(OpCode::kSin, product), product);
  return {select(c, c.binary(OpCode::kEqual, x, c.constant(0.0)), c.constant(1.0), ratio)};
}

// entr: -x log x for x > 0, 0 at 0, -inf below, NaN kept.
std::vector<ValueId> entr_body(PointwiseContext& c) {
  ValueId x = c.promoted(0);
  ValueId zero = c.constant(0.0);
  // log of a half type is rounded to it before the product, as c10's is.
  ValueId log = c.builder.cast(c.unary(OpCode::kLog, x), c.common);
  ValueId positive = c.binary(OpCode::kMultiply, c.unary(OpCode::kNegate, x), log);
  ValueId rest = select(c, c.binary(OpCode::kEqual, x, zero), zero, c.constant(-kInfinity));
  ValueId value = select(c, c.binary(OpCode::kGreater, x, zero), positive, rest);
  return {select(c, c.unary(OpCode::kIsNan, x), x, value)};
}

// signbit reads its input in its own dtype (the output is bool, and there is
// no common dtype). Floating: the sign bit itself, so -0.0 and -NaN count,
// read through copysign; integers: x < 0; bool: false.
std::vector<ValueId> signbit_body(PointwiseContext& c) {
  ValueId x = c.inputs[0];
  ir::DType type = c.builder.dtype_of(x);
  if (ir::is_floating(type)) {
    ValueId signed_one = c.binary(OpCode::kCopysign, c.builder.constant(1.0, type), x);
    return {c.binary(OpCode::kLess, signed_one, c.builder.constant(0.0, type))};
  }
  return {c.binary(OpCode::kLess, x, c.builder.constant(0.0, type))};
}

// angle of a real number: pi below 0, else 0, NaN kept.
std::vector<ValueId> angle_body(PointwiseContext& c) {
  ValueId x = c.promoted(0);
  ValueId value = select(c, c.binary(OpCode::kLess, x, c.constant(0.0)), c.constant(kPi), c.constant(0.0));
  return {select(c, c.unary(OpCode::kIsNan, x), x, value)};
}

// logit: log(x / (1 - x)), +inf at 1; with eps the input is first clamped to
// [eps, 1 - eps] (scalar 0 is eps, in the dtype), a NaN passing through. The
// CPU computes in the dtype itself: each step is rounded for the half types.
PointwiseBody logit_body(bool clamped) {
  return [clamped](PointwiseContext& c) -> std::vector<ValueId> {
    auto round = [&](ValueId value) { return c.builder.cast(value, c.common); };
    ValueId x = c.promoted(0);
    ValueId one = c.constant(1.0);
    if (clamped) {
      ValueId low = c.scalar_as(0, c.common);
      ValueId high = round(c.binary(OpCode::kSubtract, one, low));
      ValueId upper = select(c, c.binary(OpCode::kGreater, x, high), high, x);
      x = select(c, c.binary(OpCode::kLess, x, low), low, upper);
    }
    ValueId odds = round(c.binary(OpCode::kDivide, x, round(c.binary(OpCode::kSubtract, one, x))));
    return {select(c, c.binary(OpCode::kEqual, x, one), c.constant(kInfinity), c.unary(OpCode::kLog, odds))};
  };
}

// logit_backward (inputs: grad, self), in the dtype's arithmetic like logit:
// dy / (x (1 - x)) inside the domain,
// dy * inf at its ends 0 and 1; outside it NaN (no eps) or 0 (eps, whose
// domain is [eps, 1 - eps]).
PointwiseBody logit_backward_body(bool clamped) {
  return [clamped](PointwiseContext& c) -> std::vector<ValueId> {
    auto round = [&](ValueId value) { return c.builder.cast(value, c.common); };
    ValueId dy = c.promoted(0);
    ValueId x = c.promoted(1);
    ValueId zero = c.constant(0.0);
    ValueId one = c.constant(1.0);
    ValueId low = clamped ? c.scalar_as(0, c.common) : zero;
    ValueId high = clamped ? round(c.binary(OpCode::kSubtract, one, low)) : one;
    ValueId outside = c.binary(OpCode::kLogicalOr, c.binary(OpCode::kLess, x, low),
                               c.binary(OpCode::kGreater, x, high));
    ValueId at_end = c.binary(OpCode::kLogicalOr, c.binary(OpCode::kEqual, x, zero),
                              c.binary(OpCode::kEqual, x, one));
    ValueId denominator = round(c.binary(OpCode::kMultiply, x, round(c.binary(OpCode::kSubtract, one, x))));
    ValueId slope = c.binary(OpCode::kDivide, dy, denominator);
    ValueId inside = select(c, at_end, c.binary(OpCode::kMultiply, dy, c.constant(kInfinity)), slope);
    return {select(c, outside, clamped ? zero : c.constant(std::nan("")), inside)};
  };
}

// frexp: mantissa and int32 exponent, both from the input in its own dtype.
std::vector<ValueId> frexp_body(PointwiseContext& c) {
  ValueId x = c.inputs[0];
  ValueId exponent = c.builder.cast(c.unary(OpCode::kFrexpExponent, x), ir::DType::kInt32);
  return {c.unary(OpCode::kFrexpMantissa, x), exponent};
}

// -lambd <= x <= lambd (scalar 0 is lambd). NaN is outside.
ValueId within_lambda(PointwiseContext& c, ValueId x) {
  ValueId lambd = c.scalar_as(0, c.common);
  return c.binary(OpCode::kLogicalAnd,
                  c.binary(OpCode::kGreaterEqual, x, c.unary(OpCode::kNegate, lambd)),
                  c.binary(OpCode::kLessEqual, x, lambd));
}

std::vector<ValueId> hardshrink_body(PointwiseContext& c) {
  ValueId x = c.promoted(0);
  return {select(c, within_lambda(c, x), c.constant(0.0), x)};
}

// x - lambd above lambd, x + lambd below -lambd, else 0; NaN kept.
std::vector<ValueId> softshrink_body(PointwiseContext& c) {
  ValueId x = c.promoted(0);
  ValueId lambd = c.scalar_as(0, c.common);
  ValueId below = select(c, c.binary(OpCode::kLess, x, c.unary(OpCode::kNegate, lambd)),
                         c.binary(OpCode::kAdd, x, lambd), c.constant(0.0));
  ValueId value = select(c, c.binary(OpCode::kGreater, x, lambd), c.binary(OpCode::kSubtract, x, lambd), below);
  return {select(c, c.unary(OpCode::kIsNan, x), x, value)};
}

// Both shrinks' backward (inputs: grad, self): 0 within [-lambd, lambd].
std::vector<ValueId> shrink_backward_body(PointwiseContext& c) {
  return {select(c, within_lambda(c, c.promoted(1)), c.constant(0.0), c.promoted(0))};
}

// Checks the dispatch dtype, converts the scalars to the dtype itself (these
// kernels read `lambd.to<scalar_t>()`, `eps.to<scalar_t>()`), launches.
void launch(const char* op_name, const char* key, const char* dispatch_name, DTypeSet allowed,
            at::TensorIteratorBase& iter, std::initializer_list<c10::Scalar> scalars,
            const PointwiseBody& body) {
  c10::ScalarType type = dispatch_dtype(iter);
  check_dispatch_dtype(dispatch_name, type, allowed);
  c10::SmallVector<c10::Scalar, 2> converted;
  for (const c10::Scalar& value : scalars) converted.push_back(scalar_as(value, type));
  launch_rounded(op_name, key, iter, converted, body);
}

// meta(arguments...), then launch.
template <typename Meta, typename... Arguments>
const at::Tensor& run(const char* op_name, const char* key, const char* dispatch_name,
                      DTypeSet allowed, StructuredIterator<Meta>& iter,
                      std::initializer_list<c10::Scalar> scalars, const PointwiseBody& body,
                      const Arguments&... arguments) {
  iter.meta(arguments...);
  launch(op_name, key, dispatch_name, allowed, iter, scalars, body);
  return iter.result();
}

// logit and angle are not structured: the CPU builds a unary float iterator.
at::Tensor run_unary_float(const char* op_name, const char* key, const char* dispatch_name,
                           DTypeSet allowed, const at::Tensor& out, const at::Tensor& self,
                           std::initializer_list<c10::Scalar> scalars, const PointwiseBody& body) {
  at::TensorBase target = out;
  at::TensorIterator iter = at::TensorIterator::unary_float_op(target, self);
  launch(op_name, key, dispatch_name, allowed, iter, scalars, body);
  return iter.output();
}

at::Tensor run_logit(const char* op_name, const at::Tensor& out, const at::Tensor& self,
                     std::optional<double> eps) {
  bool clamped = eps.has_value() && *eps >= 0.0;
  return run_unary_float(op_name, clamped ? "logit_eps" : "logit", "logit_cpu", kFloatingTypes, out,
                         self, {eps.value_or(-1.0)}, logit_body(clamped));
}

at::Tensor run_angle(const char* op_name, const at::Tensor& out, const at::Tensor& self) {
  TORCH_CHECK(!self.is_complex(), op_name, ": complex inputs are not supported on the kiln device");
  return run_unary_float(op_name, "angle", "angle_cpu", kAllTypes, out, self, {}, angle_body);
}

// The kernel key for logit_backward's eps (the body reads it only when set;
// the CPU passes a missing eps as -1).
const char* logit_backward_key(std::optional<double> eps) {
  return eps.has_value() && *eps >= 0.0 ? "logit_backward_eps" : "logit_backward";
}

}  // namespace


at::Tensor sinc(const at::Tensor& self) {
  KILN_STRUCTURED(sinc) iter;
  return run("aten::sinc", "sinc", "sinc_cpu", kFloatingTypes, iter, {}, sinc_body, self);
}

at::Tensor& sinc_(at::Tensor& self) {
  KILN_STRUCTURED(sinc) iter(self, Target::kInPlace);
  run("aten::sinc_", "sinc", "sinc_cpu", kFloatingTypes, iter, {}, sinc_body, self);
  return self;
}

at::Tensor& sinc_out(const at::Tensor& self, at::Tensor& out) {
  KILN_STRUCTURED(sinc) iter(out, Target::kOut);
  run("aten::sinc.out", "sinc", "sinc_cpu", kFloatingTypes, iter, {}, sinc_body, self);
  return out;
}

at::Tensor special_entr(const at::Tensor& self) {
  KILN_STRUCTURED(special_entr) iter;
  return run("aten::special_entr", "entr", "entr_cpu", kFloatingTypes, iter, {},
             entr_body, self);
}

at::Tensor& special_entr_out(const at::Tensor& self, at::Tensor& out) {
  KILN_STRUCTURED(special_entr) iter(out, Target::kOut);
  run("aten::special_entr.out", "entr", "entr_cpu", kFloatingTypes, iter, {},
      entr_body, self);
  return out;
}

// signbit's output is bool whatever the input: every input dtype is covered.
at::Tensor signbit(const at::Tensor& self) {
  KILN_STRUCTURED(signbit) iter;
  return run("aten::signbit", "signbit", "signbit_cpu", kAllTypes, iter, {},
             signbit_body, self);
}

at::Tensor& signbit_out(const at::Tensor& self, at::Tensor& out) {
  KILN_STRUCTURED(signbit) iter(out, Target::kOut);
  run("aten::signbit.out", "signbit", "signbit_cpu", kAllTypes, iter, {},
      signbit_body, self);
  return out;
}

at::Tensor angle(const at::Tensor& self) { return run_angle("aten::angle", at::Tensor(), self); }

at::Tensor& angle_out(const at::Tensor& self, at::Tensor& out) {
  run_angle("aten::angle.out", out, self);
  return out;
}

at::Tensor logit(const at::Tensor& self, std::optional<double> eps) {
  return run_logit("aten::logit", at::Tensor(), self, eps);
}

at::Tensor& logit_(at::Tensor& self, std::optional<double> eps) {
  run_logit("aten::logit_", self, self, eps);
  return self;
}

at::Tensor& logit_out(const at::Tensor& self, std::optional<double> eps, at::Tensor& out) {
  run_logit("aten::logit.out", out, self, eps);
  return out;
}

at::Tensor logit_backward(const at::Tensor& grad_output, const at::Tensor& self,
                          std::optional<double> eps) {
  KILN_STRUCTURED(logit_backward) iter;
  bool clamped = eps.has_value() && *eps >= 0.0;
  return run("aten::logit_backward", logit_backward_key(eps), "logit_backward_cpu", kFloatingTypes,
             iter, {eps.value_or(-1.0)}, logit_backward_body(clamped), grad_output, self, eps);
}

at::Tensor& logit_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                               std::optional<double> eps, at::Tensor& grad_input) {
  KILN_STRUCTURED(logit_backward) iter(grad_input, Target::kOut);
  bool clamped = eps.has_value() && *eps >= 0.0;
  run("aten::logit_backward.grad_input", logit_backward_key(eps), "logit_backward_cpu",
      kFloatingTypes, iter, {eps.value_or(-1.0)}, logit_backward_body(clamped), grad_output, self,
      eps);
  return grad_input;
}

std::tuple<at::Tensor&, at::Tensor&> frexp_out(const at::Tensor& self, at::Tensor& mantissa,
                                               at::Tensor& exponent) {
  // The CPU's checks, in its order and words.
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()),
              "torch.frexp() only supports floating-point dtypes");
  TORCH_CHECK(mantissa.dtype() == self.dtype(), "torch.frexp() expects mantissa to have dtype ",
              self.dtype(), " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.dtype() == at::kInt,
              "torch.frexp() expects exponent to have int dtype but got ", exponent.dtype());
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(mantissa)
                                .add_output(exponent)
                                .add_const_input(self)
                                .check_all_same_dtype(false)
                                .set_check_mem_overlap(true)
                                .build();
  launch_pointwise("aten::frexp.Tensor_out", "frexp", iter, {}, frexp_body);
  return {mantissa, exponent};
}

#define KILN_DEFINE_SHRINK(name, body)                                                              \
  at::Tensor name(const at::Tensor& self, const c10::Scalar& lambd) {                               \
    KILN_STRUCTURED(name) iter;                                                                     \
    return run("aten::" #name, #name, #name "_cpu", kFloatingTypes, iter, {lambd}, body,            \
               self, lambd);                                                                        \
  }                                                                                                 \
  at::Tensor& name##_out(const at::Tensor& self, const c10::Scalar& lambd, at::Tensor& out) {       \
    KILN_STRUCTURED(name) iter(out, Target::kOut);                                                  \
    run("aten::" #name ".out", #name, #name "_cpu", kFloatingTypes, iter, {lambd}, body,            \
        self, lambd);                                                                               \
    return out;                                                                                     \
  }

#define KILN_DEFINE_SHRINK_BACKWARD(name)                                                           \
  at::Tensor name(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& lambd) {       \
    KILN_STRUCTURED(name) iter;                                                                     \
    return run("aten::" #name, "shrink_backward", "shrink_backward_cpu", kFloatingTypes, iter,      \
               {lambd}, shrink_backward_body, grad, self, lambd);                                   \
  }                                                                                                 \
  at::Tensor& name##_out(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& lambd,  \
                         at::Tensor& grad_input) {                                                  \
    KILN_STRUCTURED(name) iter(grad_input, Target::kOut);                                           \
    run("aten::" #name ".grad_input", "shrink_backward", "shrink_backward_cpu", kFloatingTypes,     \
        iter, {lambd}, shrink_backward_body, grad, self, lambd);                                    \
    return grad_input;                                                                              \
  }

// Both shrinks convert lambd to the dtype itself.
KILN_DEFINE_SHRINK(hardshrink, hardshrink_body)
KILN_DEFINE_SHRINK(softshrink, softshrink_body)
KILN_DEFINE_SHRINK_BACKWARD(hardshrink_backward)
KILN_DEFINE_SHRINK_BACKWARD(softshrink_backward)

#undef KILN_DEFINE_SHRINK_BACKWARD
#undef KILN_DEFINE_SHRINK

}  // namespace kiln::torch_integration::compiled
