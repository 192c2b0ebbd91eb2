// clamp family: ATen's meta functions (promotion, checks), then maximum and
// minimum in IR. kMaximum and kMinimum propagate a NaN from either side, which
// is what the CPU kernels do for a NaN input and what its NaN-bound shortcut
// (fill with NaN) yields.
#include "kiln/aten/compiled/pointwise/clamp_ops.h"

#include <ATen/ops/clamp_max_meta.h>
#include <ATen/ops/clamp_meta.h>
#include <ATen/ops/clamp_min_meta.h>

#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;

c10::OptionalScalarRef scalar_ref(const std::optional<c10::Scalar>& value) {
  return value.has_value() ? c10::OptionalScalarRef(&value.value()) : c10::OptionalScalarRef();
}

at::OptionalTensorRef tensor_ref(const std::optional<at::Tensor>& value) {
  return value.has_value() && value->defined() ? at::OptionalTensorRef(*value)
                                               : at::OptionalTensorRef();
}

Target target_of(const at::Tensor& out, bool in_place) {
  if (in_place) return Target::kInPlace;
  return out.defined() ? Target::kOut : Target::kFunctional;
}

// Scalar bounds: `lower` and/or `upper` are launch scalars 0 and 1 (or 0 alone).
PointwiseBody clamp_scalar_body(bool lower, bool upper) {
  return [lower, upper](PointwiseContext& context) -> std::vector<ir::ValueId> {
    ir::ValueId value = context.promoted(0);
    int slot = 0;
    if (lower) value = context.binary(OpCode::kMaximum, value, context.scalar_as(slot++, context.common));
    if (upper) value = context.binary(OpCode::kMinimum, value, context.scalar_as(slot, context.common));
    return {value};
  };
}

// Tensor bounds: inputs 1 (and 2) in the common dtype.
PointwiseBody clamp_tensor_body(bool lower, bool upper) {
  return [lower, upper](PointwiseContext& context) -> std::vector<ir::ValueId> {
    ir::ValueId value = context.promoted(0);
    int input = 1;
    if (lower) value = context.binary(OpCode::kMaximum, value, context.promoted(input++));
    if (upper) value = context.binary(OpCode::kMinimum, value, context.promoted(input));
    return {value};
  };
}

const char* scalar_key(bool lower, bool upper) {
  return lower && upper ? "clamp" : lower ? "clamp_min" : "clamp_max";
}

// Launches a clamp whose iterator the meta function built; bounds are
// converted to the result dtype as the CPU kernel's `Scalar::to` does.
void launch_scalar_clamp(const char* op_name, at::TensorIteratorBase& iter,
                         const std::optional<c10::Scalar>& min,
                         const std::optional<c10::Scalar>& max) {
  c10::ScalarType type = dispatch_dtype(iter);
  check_dispatch_dtype("clamp_scalar_kiln", type, kNumericTypes);
  c10::SmallVector<c10::Scalar, 2> scalars;
  if (min.has_value()) scalars.push_back(scalar_as(*min, type));
  if (max.has_value()) scalars.push_back(scalar_as(*max, type));
  launch_rounded(op_name, scalar_key(min.has_value(), max.has_value()), iter, scalars,
                 clamp_scalar_body(min.has_value(), max.has_value()));
}

at::Tensor run_clamp(const char* op_name, Target target, const at::Tensor& output,
                     const at::Tensor& self, const std::optional<c10::Scalar>& min,
                     const std::optional<c10::Scalar>& max) {
  StructuredIterator<at::meta::structured_clamp> iter(output, target);
  iter.meta(self, scalar_ref(min), scalar_ref(max));
  launch_scalar_clamp(op_name, iter, min, max);
  return iter.result();
}

at::Tensor run_clamp_min(const char* op_name, Target target, const at::Tensor& output,
                         const at::Tensor& self, const c10::Scalar& min) {
  StructuredIterator<at::meta::structured_clamp_min> iter(output, target);
  iter.meta(self, min);
  launch_scalar_clamp(op_name, iter, min, std::nullopt);
  return iter.result();
}

at::Tensor run_clamp_max(const char* op_name, Target target, const at::Tensor& output,
                         const at::Tensor& self, const c10::Scalar& max) {
  StructuredIterator<at::meta::structured_clamp_max> iter(output, target);
  iter.meta(self, max);
  launch_scalar_clamp(op_name, iter, std::nullopt, max);
  return iter.result();
}

// Tensor bounds: both run the CPU's clamp kernel (no bool); one runs
// maximum or minimum (bool included).
void launch_tensor_clamp(const char* op_name, at::TensorIteratorBase& iter, bool lower,
                         bool upper) {
  check_dispatch_dtype(lower && upper ? "clamp_kiln" : lower ? "maximum_kiln" : "minimum_kiln",
                       dispatch_dtype(iter), lower && upper ? kNumericTypes : kAllTypes);
  launch_rounded(op_name, lower && upper ? "clamp_tensor" : lower ? "maximum" : "minimum", iter,
                 {}, clamp_tensor_body(lower, upper));
}

at::Tensor run_clamp_tensor(const char* op_name, Target target, const at::Tensor& output,
                            const at::Tensor& self, const std::optional<at::Tensor>& min,
                            const std::optional<at::Tensor>& max) {
  StructuredIterator<at::meta::structured_clamp_Tensor> iter(output, target);
  at::OptionalTensorRef lower = tensor_ref(min);
  at::OptionalTensorRef upper = tensor_ref(max);
  iter.meta(self, lower, upper);
  launch_tensor_clamp(op_name, iter, lower.has_value(), upper.has_value());
  return iter.result();
}

template <typename Meta>
at::Tensor run_clamp_bound_tensor(const char* op_name, Target target, const at::Tensor& output,
                                  const at::Tensor& self, const at::Tensor& bound, bool lower) {
  StructuredIterator<Meta> iter(output, target);
  iter.meta(self, bound);
  launch_tensor_clamp(op_name, iter, lower, !lower);
  return iter.result();
}

}  // namespace

at::Tensor clamp(const at::Tensor& self, const std::optional<c10::Scalar>& min,
                 const std::optional<c10::Scalar>& max) {
  return run_clamp("aten::clamp", Target::kFunctional, at::Tensor(), self, min, max);
}

at::Tensor& clamp_(at::Tensor& self, const std::optional<c10::Scalar>& min,
                   const std::optional<c10::Scalar>& max) {
  run_clamp("aten::clamp_", Target::kInPlace, self, self, min, max);
  return self;
}

at::Tensor& clamp_out(const at::Tensor& self, const std::optional<c10::Scalar>& min,
                      const std::optional<c10::Scalar>& max, at::Tensor& out) {
  run_clamp("aten::clamp.out", Target::kOut, out, self, min, max);
  return out;
}

at::Tensor clamp_tensor(const at::Tensor& self, const std::optional<at::Tensor>& min,
                        const std::optional<at::Tensor>& max) {
  return run_clamp_tensor("aten::clamp.Tensor", Target::kFunctional, at::Tensor(), self, min, max);
}

at::Tensor& clamp_tensor_(at::Tensor& self, const std::optional<at::Tensor>& min,
                          const std::optional<at::Tensor>& max) {
  run_clamp_tensor("aten::clamp_.Tensor", Target::kInPlace, self, self, min, max);
  return self;
}

at::Tensor& clamp_tensor_out(const at::Tensor& self, const std::optional<at::Tensor>& min,
                             const std::optional<at::Tensor>& max, at::Tensor& out) {
  run_clamp_tensor("aten::clamp.Tensor_out", Target::kOut, out, self, min, max);
  return out;
}

#define KILN_DEFINE_CLAMP_BOUND(name, lower)                                                     \
  at::Tensor name(const at::Tensor& self, const c10::Scalar& bound) {                            \
    return run_##name("aten::" #name, Target::kFunctional, at::Tensor(), self, bound);           \
  }                                                                                              \
  at::Tensor& name##_(at::Tensor& self, const c10::Scalar& bound) {                              \
    run_##name("aten::" #name "_", Target::kInPlace, self, self, bound);                         \
    return self;                                                                                 \
  }                                                                                              \
  at::Tensor& name##_out(const at::Tensor& self, const c10::Scalar& bound, at::Tensor& out) {    \
    run_##name("aten::" #name ".out", Target::kOut, out, self, bound);                           \
    return out;                                                                                  \
  }                                                                                              \
  at::Tensor name##_tensor(const at::Tensor& self, const at::Tensor& bound) {                    \
    return run_clamp_bound_tensor<at::meta::structured_##name##_Tensor>(                         \
        "aten::" #name ".Tensor", Target::kFunctional, at::Tensor(), self, bound, lower);        \
  }                                                                                              \
  at::Tensor& name##_tensor_(at::Tensor& self, const at::Tensor& bound) {                        \
    run_clamp_bound_tensor<at::meta::structured_##name##_Tensor>(                                \
        "aten::" #name "_.Tensor", Target::kInPlace, self, self, bound, lower);                  \
    return self;                                                                                 \
  }                                                                                              \
  at::Tensor& name##_tensor_out(const at::Tensor& self, const at::Tensor& bound,                 \
                                at::Tensor& out) {                                               \
    run_clamp_bound_tensor<at::meta::structured_##name##_Tensor>(                                \
        "aten::" #name ".Tensor_out", Target::kOut, out, self, bound, lower);                    \
    return out;                                                                                  \
  }

KILN_DEFINE_CLAMP_BOUND(clamp_min, true)
KILN_DEFINE_CLAMP_BOUND(clamp_max, false)

#undef KILN_DEFINE_CLAMP_BOUND

at::Tensor clamp_min_as(const char* op_name, const at::Tensor& self, const c10::Scalar& min,
                        const at::Tensor& out, bool in_place) {
  return run_clamp_min(op_name, target_of(out, in_place), out, self, min);
}

at::Tensor clamp_as(const char* op_name, const at::Tensor& self, const c10::Scalar& min,
                    const c10::Scalar& max, const at::Tensor& out, bool in_place) {
  return run_clamp(op_name, target_of(out, in_place), out, self, min, max);
}

}  // namespace kiln::torch_integration::compiled
