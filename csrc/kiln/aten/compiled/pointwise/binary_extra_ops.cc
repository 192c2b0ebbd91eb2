// Binary extras: each op's structured meta function (broadcasting, promotion,
// its own checks and messages), the CPU kernel's dtype coverage, then the CPU
// kernel's formula in IR.
#include "kiln/aten/compiled/pointwise/binary_extra_ops.h"

#include <ATen/ops/all.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/fmax_meta.h>
#include <ATen/ops/fmin_meta.h>
#include <ATen/ops/heaviside_meta.h>
#include <ATen/ops/logaddexp2_meta.h>
#include <ATen/ops/logaddexp_meta.h>
#include <ATen/ops/nextafter_meta.h>
#include <ATen/ops/special_xlog1py_meta.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/xlogy_meta.h>

#include <cmath>
#include <limits>

#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// fmax/fmin: a NaN operand yields the other one (NaN only when both are);
// integers and bool have no NaN and take the plain max/min.
PointwiseBody nan_ignoring(OpCode op) {
  return [op](PointwiseContext& c) -> std::vector<ValueId> {
    ValueId a = c.promoted(0);
    ValueId b = c.promoted(1);
    ValueId extreme = c.binary(op, a, b);
    if (!ir::is_floating(c.common)) return {extreme};
    ValueId b_or_extreme = c.builder.select(c.unary(OpCode::kIsNan, b), a, extreme);
    return {c.builder.select(c.unary(OpCode::kIsNan, a), b, b_or_extreme)};
  };
}

// heaviside: a == 0 ? values : (a > 0), in the common dtype.
std::vector<ValueId> heaviside_body(PointwiseContext& c) {
  ValueId a = c.promoted(0);
  ValueId zero = c.constant(0.0);
  ValueId step = c.builder.cast(c.binary(OpCode::kGreater, a, zero), c.common);
  return {c.builder.select(c.binary(OpCode::kEqual, a, zero), c.promoted(1), step)};
}

// logaddexp (base e) and logaddexp2: max(a, b) + log1p(exp(-|a - b|)) (scaled
// by 1/ln 2 in base 2), except that two equal infinities give themselves (the
// formula would give NaN from inf - inf).
PointwiseBody log_add_exp(bool base_two) {
  return [base_two](PointwiseContext& c) -> std::vector<ValueId> {
    ValueId a = c.promoted(0);
    ValueId b = c.promoted(1);
    ValueId same_infinity =
        c.binary(OpCode::kLogicalAnd, c.binary(OpCode::kEqual, a, b),
                 c.binary(OpCode::kEqual, c.unary(OpCode::kAbs, a), c.constant(kInfinity)));
    ValueId negative_gap = c.unary(OpCode::kNegate, c.unary(OpCode::kAbs, c.binary(OpCode::kSubtract, a, b)));
    ValueId tail = c.unary(OpCode::kLog1p, c.unary(base_two ? OpCode::kExp2 : OpCode::kExp, negative_gap));
    if (base_two) tail = c.binary(OpCode::kMultiply, tail, c.constant(1.0 / std::log(2.0)));
    ValueId smooth = c.binary(OpCode::kAdd, c.binary(OpCode::kMaximum, a, b), tail);
    return {c.builder.select(same_infinity, a, smooth)};
  };
}

// xlogy and xlog1py: NaN when y is NaN, else 0 when x is 0 (even for y = 0),
// else x * log(y) (x * log1p(y)). c10's log of a half type returns that type,
// so the CPU rounds the logarithm before the product.
PointwiseBody x_log(OpCode log) {
  return [log](PointwiseContext& c) -> std::vector<ValueId> {
    ValueId x = c.rounded(0);  // a scalar rounded to a half type, as on the CPU
    ValueId y = c.rounded(1);
    ValueId product = c.binary(OpCode::kMultiply, x, c.builder.cast(c.unary(log, y), c.common));
    ValueId zero = c.constant(0.0);
    ValueId finite_y = c.builder.select(c.binary(OpCode::kEqual, x, zero), zero, product);
    return {c.builder.select(c.unary(OpCode::kIsNan, y), c.constant(std::nan("")), finite_y)};
  };
}

// nextafter in the common dtype. float and double use libm's. float16 and
// bfloat16 values sit in float32 exactly: their neighbour is float32's
// neighbour step scaled by the ratio of the two spacings (2^13 and 2^16, exact
// powers of two), with float16's subnormal spacing 2^-24 as the floor, and an
// infinity stepping back to the largest finite value. Rounding the result to
// the half type turns a step past the largest finite value into infinity.
std::vector<ValueId> nextafter_body(PointwiseContext& c) {
  ValueId from = c.promoted(0);
  ValueId to = c.promoted(1);
  ValueId next = c.binary(OpCode::kNextAfter, from, to);
  bool half = c.common == ir::DType::kFloat16;
  if (!half && c.common != ir::DType::kBFloat16) return {next};
  ValueId step = c.binary(OpCode::kMultiply, c.binary(OpCode::kSubtract, next, from),
                          c.constant(half ? 8192.0 : 65536.0));
  if (half) {
    ValueId floor = c.constant(std::ldexp(1.0, -24));
    ValueId magnitude = c.binary(OpCode::kMaximum, c.unary(OpCode::kAbs, step), floor);
    step = c.binary(OpCode::kCopysign, magnitude, step);
  }
  ValueId stepped = c.builder.cast(c.binary(OpCode::kAdd, from, step), c.common);
  double largest = half ? 65504.0 : 3.3895313892515355e38;  // 0x7BFF and 0x7F7F
  ValueId infinite_from = c.binary(OpCode::kEqual, c.unary(OpCode::kAbs, from), c.constant(kInfinity));
  ValueId back = c.binary(OpCode::kCopysign, c.constant(largest), from);
  ValueId result = c.builder.select(infinite_from, back, stepped);
  // Equal values give `to`, as the CPU does; a NaN `from` is NaN through the
  // arithmetic, a NaN `to` is chosen here.
  ValueId to_wins = c.binary(OpCode::kLogicalOr, c.binary(OpCode::kEqual, from, to),
                             c.unary(OpCode::kIsNan, to));
  return {c.builder.select(to_wins, to, result)};
}

template <typename Meta>
const at::Tensor& run(const char* op_name, const char* key, const char* dispatch_name,
                      DTypeSet allowed, StructuredIterator<Meta>& iter, const at::Tensor& self,
                      const at::Tensor& other, const PointwiseBody& body) {
  iter.meta(self, other);
  check_dispatch_dtype(dispatch_name, dispatch_dtype(iter), allowed);
  launch_rounded(op_name, key, iter, {}, body);
  return iter.result();
}

}  // namespace

#define KILN_DEFINE_BINARY_EXTRA(name, meta_class, key, dispatch_name, allowed, body)               \
  at::Tensor name(const at::Tensor& self, const at::Tensor& other) {                                \
    StructuredIterator<at::meta::meta_class> iter;                                                  \
    return run("aten::" #name, key, dispatch_name, allowed, iter, self, other, body);               \
  }                                                                                                 \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {        \
    StructuredIterator<at::meta::meta_class> iter(out, Target::kOut);                               \
    run("aten::" #name ".out", key, dispatch_name, allowed, iter, self, other, body);               \
    return out;                                                                                     \
  }
#define KILN_DEFINE_BINARY_EXTRA_INPLACE(name, meta_class, key, dispatch_name, allowed, body)       \
  KILN_DEFINE_BINARY_EXTRA(name, meta_class, key, dispatch_name, allowed, body)                     \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& other) {                                  \
    StructuredIterator<at::meta::meta_class> iter(self, Target::kInPlace);                          \
    run("aten::" #name "_", key, dispatch_name, allowed, iter, self, other, body);                  \
    return self;                                                                                    \
  }

KILN_DEFINE_BINARY_EXTRA(fmax, structured_fmax, "fmax", "fmax_cpu", kAllTypes,
                         nan_ignoring(OpCode::kMaximum))
KILN_DEFINE_BINARY_EXTRA(fmin, structured_fmin, "fmin", "fmin_cpu", kAllTypes,
                         nan_ignoring(OpCode::kMinimum))
KILN_DEFINE_BINARY_EXTRA(logaddexp, structured_logaddexp, "logaddexp", "logaddexp_cpu",
                         kFloatingTypes, log_add_exp(false))
KILN_DEFINE_BINARY_EXTRA(logaddexp2, structured_logaddexp2, "logaddexp2", "logaddexp2_cpu",
                         kFloatingTypes, log_add_exp(true))
KILN_DEFINE_BINARY_EXTRA(special_xlog1py, structured_special_xlog1py, "xlog1py", "xlog1py_cpu",
                         kFloatingTypes, x_log(OpCode::kLog1p))
KILN_DEFINE_BINARY_EXTRA_INPLACE(heaviside, structured_heaviside, "heaviside", "heaviside_cpu",
                                 kAllTypes, heaviside_body)
KILN_DEFINE_BINARY_EXTRA_INPLACE(xlogy, structured_xlogy_Tensor, "xlogy", "xlogy_cpu",
                                 kFloatingTypes, x_log(OpCode::kLog))
KILN_DEFINE_BINARY_EXTRA_INPLACE(nextafter, structured_nextafter, "nextafter", "nextafter_cpu",
                                 kFloatingTypes, nextafter_body)

#undef KILN_DEFINE_BINARY_EXTRA_INPLACE
#undef KILN_DEFINE_BINARY_EXTRA

at::Tensor rsub(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  return at::sub(other, self, alpha);
}

bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  if (!self.is_same_size(other)) return false;
  // eq promotes both to their common dtype, as the CPU's equal does; NaN is
  // unequal to itself there too.
  return at::all(at::eq(self, other)).item<bool>();
}

}  // namespace kiln::torch_integration::compiled
