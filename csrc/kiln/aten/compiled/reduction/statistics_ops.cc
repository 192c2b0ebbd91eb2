// var, std, vector norms and logsumexp. The checks are those of ATen's
// std_var_out, std_var_mean_out, linalg_vector_norm's meta function and
// logsumexp_out; the arithmetic follows their CPU kernels: the input is
// converted to the result dtype first, then folded in a wider type.
#include "kiln/aten/compiled/reduction/statistics_ops.h"

#include <ATen/TensorIterator.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/linalg_vector_norm_meta.h>
#include <ATen/ops/norm_meta.h>
#include <c10/core/DefaultDtype.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/pointwise.h"
#include "kiln/aten/compiled/launch/reduction_support.h"
#include "kiln/aten/compiled/launch/structured_run.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::DType;
using ir::OpCode;
using ir::ReduceOp;

// ---------------------------------------------------------------- var / std

// Where a var/std call writes: the result, and for var_mean/std_mean the mean.
struct VarianceTargets {
  at::Tensor result;
  at::Tensor mean;  // undefined for var and std
};

void warn_degrees_of_freedom(const char* name, const at::Tensor& self, const at::Tensor& result,
                             double correction) {
  int64_t outputs = result.numel();
  int64_t count = outputs == 0 ? 0 : self.numel() / outputs;
  if (static_cast<double>(count) - correction <= 0) {
    TORCH_WARN(name, "(): degrees of freedom is <= 0. Correction should be strictly less than the "
               "reduction factor (input numel divided by output numel).");
  }
}

// The two passes. The element is the input converted to the result dtype (as
// ATen converts a reduction's input), then widened to float64.
void variance_into(const char* op_name, const at::Tensor& self, c10::IntArrayRef reduced,
                   bool keepdim, double correction, bool take_sqrt,
                   const VarianceTargets& targets) {
  if (self.numel() == 0) {
    // ATen's "trivial reduction": NaN whatever the correction.
    targets.result.fill_(std::numeric_limits<double>::quiet_NaN());
    if (targets.mean.defined()) targets.mean.fill_(std::numeric_limits<double>::quiet_NaN());
    return;
  }
  DType result_dtype = require_ir_dtype(targets.result.scalar_type(), op_name);
  auto element = [result_dtype](ReductionContext& context) {
    return context.builder.cast(converted_input(context, 0, result_dtype), DType::kFloat64);
  };
  const int64_t count = reduced_count(self, reduced);

  // Pass 1: the mean, in float64 (then rounded into the mean result: one
  // output keeps the pass eligible for launch_reduction's two-stage split).
  at::Tensor mean = at::empty(reduced_shape(self, reduced, keepdim), self.options().dtype(at::kDouble));
  ReductionSpec mean_spec;
  mean_spec.op = ReduceOp::kSum;
  mean_spec.element = element;
  mean_spec.epilogue = [](ReductionContext& context) -> std::vector<ir::ValueId> {
    ir::Builder& builder = context.builder;
    // Cast: a large reduction's second stage folds partial sums stored in
    // the output's precision (launch_reduction).
    ir::ValueId sum = builder.cast(builder.accumulator(), DType::kFloat64);
    return {builder.binary(OpCode::kDivide, sum, context.scalars[0])};
  };
  // The element depends on the result's dtype, which is none of this pass's
  // operands (self and the float64 mean): the key names it, or a var into a
  // float16 out= reused the float64 one's kernel and gave inf where NaN is
  // due (found by tests/python/op_fuzz.py).
  const std::string mean_key = std::string("variance_mean_") + c10::toString(targets.result.scalar_type());
  reduce(op_name, mean_key, self, reduced, {mean}, {},
         {c10::Scalar(static_cast<double>(count))}, mean_spec);
  if (targets.mean.defined()) convert_into(op_name, targets.mean, mean);

  // Pass 2: the squared deviations, over max(0, N - correction).
  ReductionSpec spec;
  spec.op = ReduceOp::kSum;
  spec.element = [element](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ir::ValueId deviation = builder.binary(OpCode::kSubtract, element(context),
                                           builder.cast(context.inputs[1], DType::kFloat64));
    return builder.binary(OpCode::kMultiply, deviation, deviation);
  };
  spec.epilogue = [take_sqrt](ReductionContext& context) -> std::vector<ir::ValueId> {
    ir::Builder& builder = context.builder;
    ir::ValueId sum = builder.cast(builder.accumulator(), DType::kFloat64);
    ir::ValueId value = builder.binary(OpCode::kDivide, sum, context.scalars[0]);
    if (take_sqrt) value = builder.unary(OpCode::kSqrt, value);
    return {value};
  };
  double divisor = std::max(0.0, static_cast<double>(count) - correction);
  reduce(op_name, take_sqrt ? "std" : "var", self, reduced, {targets.result}, {mean},
         {c10::Scalar(divisor)}, spec);
}

void check_floating(const char* prefix, const at::Tensor& self) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              prefix, " only support floating point and complex dtypes");
}

// ATen's std_var_out: `out` takes any dtype the input casts to.
at::Tensor& std_var_out(const char* name, const char* op_name, const at::Tensor& self,
                        at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction_opt,
                        bool keepdim, bool take_sqrt, at::Tensor& out) {
  check_floating("std and var", self);
  const double correction = correction_opt.value_or(1).toDouble();
  c10::DimVector reduced = reduced_dims(self, dim);
  at::native::resize_output(out, reduced_shape(self, reduced, keepdim));
  TORCH_CHECK(at::canCast(self.scalar_type(), out.scalar_type()), "result type ",
              self.scalar_type(), " can't be cast to the desired output type ", out.scalar_type());
  warn_degrees_of_freedom(name, self, out, correction);
  variance_into(op_name, self, reduced, keepdim, correction, take_sqrt, {out, at::Tensor()});
  return out;
}

std::tuple<at::Tensor, at::Tensor> std_var_mean(const char* name, const char* op_name,
                                                const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                const std::optional<c10::Scalar>& correction_opt,
                                                bool keepdim, bool take_sqrt) {
  check_floating(name, self);
  const double correction = correction_opt.value_or(1).toDouble();
  c10::DimVector reduced = reduced_dims(self, dim);
  c10::DimVector shape = reduced_shape(self, reduced, keepdim);
  at::Tensor result = at::empty(shape, self.options());
  at::Tensor mean = at::empty(shape, self.options());
  warn_degrees_of_freedom(name, self, result, correction);
  variance_into(op_name, self, reduced, keepdim, correction, take_sqrt, {result, mean});
  return {result, mean};
}

// ---------------------------------------------------------------- norms

// How linalg_vector_norm folds each element and finishes, by order.
enum class NormKind { kZero, kOne, kTwo, kInfinity, kNegativeInfinity, kGeneral };

NormKind norm_kind(double ord) {
  if (ord == 0.0) return NormKind::kZero;
  if (ord == 1.0) return NormKind::kOne;
  if (ord == 2.0) return NormKind::kTwo;
  if (ord == INFINITY) return NormKind::kInfinity;
  if (ord == -INFINITY) return NormKind::kNegativeInfinity;
  return NormKind::kGeneral;
}

const char* norm_key(NormKind kind) {
  switch (kind) {
    case NormKind::kZero: return "vector_norm_0";
    case NormKind::kOne: return "vector_norm_1";
    case NormKind::kTwo: return "vector_norm_2";
    case NormKind::kInfinity: return "vector_norm_inf";
    case NormKind::kNegativeInfinity: return "vector_norm_-inf";
    case NormKind::kGeneral: return "vector_norm_p";
  }
  return "vector_norm";
}

// `out` sized by the meta function. The input is converted to the result
// dtype (norms only widen), then folded in its compute dtype: count of
// nonzeros, sum of |x|, sqrt of the sum of squares, max or min of |x|, or
// (sum of |x|^p)^(1/p).
void vector_norm_into(const char* op_name, const at::Tensor& self, double ord,
                      at::OptionalIntArrayRef dim, const at::Tensor& out) {
  const NormKind kind = norm_kind(ord);
  // ATen's linalg_vector_norm_out: when every reduced dim has size 1 (a 0-dim
  // tensor included), the norm is |x| (x != 0 for ord 0), converted to the
  // result's dtype first, never x*x: the 2-norm of float32's largest value
  // is that value, not inf (found by tests/python/op_fuzz.py).
  const c10::DimVector reduced = reduced_dims(self, dim);
  const bool single_elements = self.dim() == 0 ||
      std::all_of(reduced.begin(), reduced.end(), [&](int64_t d) { return self.size(d) == 1; });
  if (single_elements) {
    at::Tensor source = out.dim() == self.dim() ? self : self.squeeze(reduced);
    if (!source.is_complex() && source.scalar_type() != out.scalar_type()) {
      source = source.to(out.scalar_type());
    }
    if (kind == NormKind::kZero) {
      at::ne_out(const_cast<at::Tensor&>(out), source, 0);
    } else {
      at::abs_out(const_cast<at::Tensor&>(out), source);
    }
    return;
  }
  DType result_dtype = require_ir_dtype(out.scalar_type(), op_name);
  DType compute = ir::compute_dtype(result_dtype);
  ReductionSpec spec;
  spec.op = kind == NormKind::kInfinity           ? ReduceOp::kMax
            : kind == NormKind::kNegativeInfinity ? ReduceOp::kMin
                                                  : ReduceOp::kSum;
  spec.element = [kind, result_dtype, compute](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ir::ValueId value = converted_input(context, 0, result_dtype);
    switch (kind) {
      case NormKind::kZero: return builder.cast(builder.cast(value, DType::kBool), compute);
      case NormKind::kTwo: return builder.binary(OpCode::kMultiply, value, value);
      case NormKind::kGeneral:
        return builder.binary(OpCode::kPower, builder.unary(OpCode::kAbs, value),
                              builder.cast(context.scalars[0], compute));
      default: return builder.unary(OpCode::kAbs, value);
    }
  };
  c10::SmallVector<c10::Scalar, 2> scalars;
  if (kind == NormKind::kGeneral) {
    scalars = {c10::Scalar(ord), c10::Scalar(1.0 / ord)};
  }
  spec.epilogue = [kind, compute](ReductionContext& context) -> std::vector<ir::ValueId> {
    ir::Builder& builder = context.builder;
    ir::ValueId value = builder.accumulator();
    if (kind == NormKind::kTwo) value = builder.unary(OpCode::kSqrt, value);
    if (kind == NormKind::kGeneral) {
      value = builder.binary(OpCode::kPower, value, builder.cast(context.scalars[1], compute));
    }
    return {value};
  };
  reduce(op_name, norm_key(kind), self, reduced_dims(self, dim), {out}, {}, scalars, spec);
}

at::OptionalScalarRef optional_ref(const std::optional<c10::Scalar>& value) {
  return value.has_value() ? at::OptionalScalarRef(&value.value()) : at::OptionalScalarRef();
}

// ---------------------------------------------------------------- logsumexp

// The three kernels into `out` (sized), for the reduced dims of `self`.
void logsumexp_into(const at::Tensor& self, c10::IntArrayRef reduced, bool keepdim,
                    const at::Tensor& out) {
  if (out.numel() == 0) return;
  const char* op_name = "aten::logsumexp.out";
  DType result_dtype = require_ir_dtype(out.scalar_type(), op_name);
  DType compute = ir::compute_dtype(result_dtype);
  // Integers are converted to the default float dtype first, as ATen does.
  at::ScalarType source_type = at::isIntegralType(self.scalar_type(), /*includeBool=*/true)
                                   ? c10::typeMetaToScalarType(c10::get_default_dtype())
                                   : self.scalar_type();
  DType source = require_ir_dtype(source_type, op_name);
  auto element = [source, compute](ReductionContext& context) {
    return context.builder.cast(converted_input(context, 0, source), compute);
  };
  at::ScalarType temporary_type = compute == DType::kFloat64 ? at::kDouble : at::kFloat;
  c10::DimVector shape(out.sizes().begin(), out.sizes().end());
  at::Tensor maximum = at::empty(shape, self.options().dtype(temporary_type));
  at::Tensor sum = at::empty(shape, self.options().dtype(temporary_type));

  // The maximum, with an infinite one (or none: an empty reduction) as 0.
  ReductionSpec maximum_spec;
  maximum_spec.op = ReduceOp::kMax;
  maximum_spec.element = element;
  maximum_spec.epilogue = [compute](ReductionContext& context) -> std::vector<ir::ValueId> {
    ir::Builder& builder = context.builder;
    ir::ValueId value = builder.accumulator();
    return {builder.select(builder.unary(OpCode::kIsInf, value), builder.constant(0.0, compute), value)};
  };
  reduce(op_name, "logsumexp_max", self, reduced, {maximum}, {}, {}, maximum_spec);

  ReductionSpec sum_spec;
  sum_spec.op = ReduceOp::kSum;
  sum_spec.element = [element](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ir::ValueId shifted = builder.binary(OpCode::kSubtract, element(context), context.inputs[1]);
    return builder.unary(OpCode::kExp, shifted);
  };
  reduce(op_name, "logsumexp_sum", self, reduced, {sum}, {maximum}, {}, sum_spec);

  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(out)
                                .add_const_input(sum)
                                .add_const_input(maximum)
                                .check_all_same_dtype(false)
                                .resize_outputs(false)
                                .build();
  launch_pointwise(op_name, "logsumexp_finish", iter, {},
                   [](PointwiseContext& context) -> std::vector<ir::ValueId> {
                     ir::ValueId log = context.unary(OpCode::kLog, context.inputs[0]);
                     return {context.binary(OpCode::kAdd, log, context.inputs[1])};
                   });
  (void)keepdim;
}

}  // namespace

at::Tensor& var_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                    const std::optional<c10::Scalar>& correction, bool keepdim, at::Tensor& out) {
  return std_var_out("var", "aten::var.correction_out", self, dim, correction, keepdim, false, out);
}

at::Tensor var(const at::Tensor& self, at::OptionalIntArrayRef dim,
               const std::optional<c10::Scalar>& correction, bool keepdim) {
  at::Tensor out = at::empty({0}, self.options());
  return std_var_out("var", "aten::var.correction", self, dim, correction, keepdim, false, out);
}

at::Tensor& std_dev_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                    const std::optional<c10::Scalar>& correction, bool keepdim, at::Tensor& out) {
  return std_var_out("std", "aten::std.correction_out", self, dim, correction, keepdim, true, out);
}

at::Tensor std_dev(const at::Tensor& self, at::OptionalIntArrayRef dim,
               const std::optional<c10::Scalar>& correction, bool keepdim) {
  at::Tensor out = at::empty({0}, self.options());
  return std_var_out("std", "aten::std.correction", self, dim, correction, keepdim, true, out);
}

std::tuple<at::Tensor, at::Tensor> var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<c10::Scalar>& correction,
                                            bool keepdim) {
  return std_var_mean("var_mean", "aten::var_mean.correction", self, dim, correction, keepdim, false);
}

std::tuple<at::Tensor, at::Tensor> std_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<c10::Scalar>& correction,
                                            bool keepdim) {
  return std_var_mean("std_mean", "aten::std_mean.correction", self, dim, correction, keepdim, true);
}

at::Tensor& linalg_vector_norm_out(const at::Tensor& self, const c10::Scalar& ord,
                                   at::OptionalIntArrayRef dim, bool keepdim,
                                   std::optional<at::ScalarType> dtype, at::Tensor& out) {
  structured<at::meta::structured_linalg_vector_norm>(&out, [&](const at::Tensor& result) {
    vector_norm_into("aten::linalg_vector_norm.out", self, ord.toDouble(), dim, result);
  }, self, ord, dim, keepdim, dtype);
  return out;
}

at::Tensor linalg_vector_norm(const at::Tensor& self, const c10::Scalar& ord,
                              at::OptionalIntArrayRef dim, bool keepdim,
                              std::optional<at::ScalarType> dtype) {
  return structured<at::meta::structured_linalg_vector_norm>(nullptr, [&](const at::Tensor& result) {
    vector_norm_into("aten::linalg_vector_norm", self, ord.toDouble(), dim, result);
  }, self, ord, dim, keepdim, dtype);
}

// ATen's norm overloads run their own meta function, then
// linalg_vector_norm_out into the result (whose checks then apply too).
at::Tensor& norm_out(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                     at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  structured<at::meta::structured_norm_ScalarOpt_dim>(&out, [&](at::Tensor& result) {
    linalg_vector_norm_out(self, p.value_or(2.0), dim, keepdim, std::nullopt, result);
  }, self, optional_ref(p), dim, keepdim);
  return out;
}

at::Tensor norm(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim,
                bool keepdim) {
  return structured<at::meta::structured_norm_ScalarOpt_dim>(nullptr, [&](at::Tensor& result) {
    linalg_vector_norm_out(self, p.value_or(2.0), dim, keepdim, std::nullopt, result);
  }, self, optional_ref(p), dim, keepdim);
}

at::Tensor& norm_dtype_out(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                           at::IntArrayRef dim, bool keepdim, at::ScalarType dtype,
                           at::Tensor& out) {
  structured<at::meta::structured_norm_ScalarOpt_dim_dtype>(&out, [&](at::Tensor& result) {
    linalg_vector_norm_out(self, p.value_or(2.0), dim, keepdim, dtype, result);
  }, self, optional_ref(p), dim, keepdim, dtype);
  return out;
}

at::Tensor norm_dtype(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                      at::IntArrayRef dim, bool keepdim, at::ScalarType dtype) {
  return structured<at::meta::structured_norm_ScalarOpt_dim_dtype>(nullptr, [&](at::Tensor& result) {
    linalg_vector_norm_out(self, p.value_or(2.0), dim, keepdim, dtype, result);
  }, self, optional_ref(p), dim, keepdim, dtype);
}

at::Tensor& logsumexp_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim,
                          at::Tensor& out) {
  TORCH_CHECK(at::isFloatingType(out.scalar_type()) || at::isComplexType(out.scalar_type()),
              "logsumexp(): Expected floating point type for result tensor, but got: ",
              out.scalar_type());
  c10::DimVector reduced = reduced_dims(self, dim);
  // ATen reduces everything for an empty dim list but then adds the maximum
  // kept with every dim, which fails to broadcast into the result.
  if (dim.empty() && !keepdim && self.dim() > 0 && self.numel() > 0) {
    c10::DimVector ones(self.dim(), 1);
    TORCH_CHECK(false, "output with shape [] doesn't match the broadcast shape ",
                c10::IntArrayRef(ones));
  }
  at::native::resize_output(out, reduced_shape(self, reduced, keepdim));
  logsumexp_into(self, reduced, keepdim, out);
  return out;
}

at::Tensor logsumexp(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  at::ScalarType result = at::isIntegralType(self.scalar_type(), /*includeBool=*/true)
                              ? c10::typeMetaToScalarType(c10::get_default_dtype())
                              : self.scalar_type();
  at::Tensor out = at::empty({0}, self.options().dtype(result));
  return logsumexp_out(self, dim, keepdim, out);
}

}  // namespace kiln::torch_integration::compiled
