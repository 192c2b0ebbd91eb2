#include "kiln/aten/compiled/nn/distance/distance_ops.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/_euclidean_dist.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/triu_indices.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/accumulate.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/reduction.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::DType;
using ir::OpCode;
using ir::ValueId;

// The CPU kernels' cases of p, each with its own formula.
enum class Norm { kZero, kOne, kBelowTwo, kTwo, kInfinity, kAboveTwo };

Norm norm_of(double p) {
  if (p == 0) return Norm::kZero;
  if (p == 1) return Norm::kOne;
  if (p == 2) return Norm::kTwo;
  if (std::isinf(p)) return Norm::kInfinity;
  return p < 2 ? Norm::kBelowTwo : Norm::kAboveTwo;
}

std::string norm_key(const char* prefix, Norm norm) {
  return std::string(prefix) + "_p" + std::to_string(static_cast<int>(norm));
}


// The distance of one pair of rows into each position of `output` (keepdim
// over `columns`, the last dim of `x` and `y`, both already broadcast).
// Scalars: 0 p.
void launch_distance(const char* op_name, double p, const at::Tensor& x, const at::Tensor& y,
                     const at::Tensor& output) {
  const Norm norm = norm_of(p);
  const int64_t rank = x.dim();
  const int64_t columns[] = {rank - 1};
  ReductionSpec spec;
  spec.op = norm == Norm::kInfinity ? ir::ReduceOp::kMax : ir::ReduceOp::kSum;
  spec.element = [norm](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ValueId difference = builder.binary(OpCode::kSubtract, context.inputs[0], context.inputs[1]);
    ValueId magnitude = builder.unary(OpCode::kAbs, difference);
    const DType type = builder.dtype_of(difference);
    switch (norm) {
      case Norm::kZero:
        return builder.select(builder.binary(OpCode::kNotEqual, difference, builder.constant(0, type)),
                              builder.constant(1, type), builder.constant(0, type));
      case Norm::kTwo: return builder.binary(OpCode::kMultiply, difference, difference);
      case Norm::kBelowTwo:
      case Norm::kAboveTwo:
        return builder.binary(OpCode::kPower, magnitude, builder.cast(context.scalars[0], type));
      default: return magnitude;
    }
  };
  spec.epilogue = [norm](ReductionContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    ValueId total = builder.accumulator();
    const DType type = builder.dtype_of(total);
    if (norm == Norm::kTwo) return {builder.unary(OpCode::kSqrt, total)};
    if (norm == Norm::kBelowTwo || norm == Norm::kAboveTwo) {
      ValueId inverse = builder.binary(OpCode::kDivide, builder.constant(1, type),
                                       builder.cast(context.scalars[0], type));
      return {builder.binary(OpCode::kPower, total, inverse)};
    }
    return {total};
  };
  const at::Tensor inputs[] = {x, y};
  const c10::Scalar scalars[] = {scalar_as(p, x.scalar_type())};
  launch_reduction(op_name, norm_key("distance", norm), inputs, {keepdim_view(output, rank, columns)},
                   columns, scalars, spec);
}

// The CPU's derivative of one pair's distance by one column of the first
// row, times the distance's gradient. Inputs: difference, grad, distance;
// scalars: 0 p.
ValueId distance_derivative(ir::Builder& builder, Norm norm, ValueId difference, ValueId grad,
                            ValueId distance, ValueId p) {
  const DType type = builder.dtype_of(difference);
  ValueId zero = builder.constant(0, type);
  ValueId sign = builder.unary(OpCode::kSign, difference);
  ValueId magnitude = builder.unary(OpCode::kAbs, difference);
  ValueId at_zero = builder.binary(OpCode::kEqual, distance, zero);
  auto power = [&](ValueId base, double offset) {
    return builder.binary(OpCode::kPower, base,
                          builder.binary(OpCode::kSubtract, p, builder.constant(offset, type)));
  };
  switch (norm) {
    case Norm::kZero: return zero;
    case Norm::kOne: return builder.binary(OpCode::kMultiply, grad, sign);
    case Norm::kTwo:
      return builder.select(at_zero, zero,
                            builder.binary(OpCode::kDivide, builder.binary(OpCode::kMultiply, grad, difference),
                                           distance));
    case Norm::kInfinity: {
      ValueId largest = builder.binary(OpCode::kEqual, magnitude, distance);
      return builder.binary(OpCode::kMultiply, builder.binary(OpCode::kMultiply, grad, sign),
                            builder.select(largest, builder.constant(1, type), zero));
    }
    case Norm::kBelowTwo: {
      ValueId skip = builder.binary(
          OpCode::kLogicalOr, at_zero,
          builder.binary(OpCode::kLogicalAnd, builder.binary(OpCode::kEqual, difference, zero),
                         builder.binary(OpCode::kLess, p, builder.constant(1, type))));
      ValueId numerator = builder.binary(OpCode::kMultiply, builder.binary(OpCode::kMultiply, sign, power(magnitude, 1)), grad);
      return builder.select(skip, zero, builder.binary(OpCode::kDivide, numerator, power(distance, 1)));
    }
    case Norm::kAboveTwo: {
      ValueId numerator = builder.binary(OpCode::kMultiply, builder.binary(OpCode::kMultiply, difference, power(magnitude, 2)), grad);
      return builder.select(at_zero, zero, builder.binary(OpCode::kDivide, numerator, power(distance, 1)));
    }
  }
  return zero;
}

void check_cdist_operands(const at::Tensor& x1, const at::Tensor& x2, double p,
                          std::optional<int64_t> compute_mode) {
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ",
              x1.size(-1), " X2: ", x2.size(-1));
  TORCH_CHECK(at::isFloatingType(x1.scalar_type()),
              "cdist only supports floating-point dtypes, X1 got: ", x1.scalar_type());
  TORCH_CHECK(at::isFloatingType(x2.scalar_type()),
              "cdist only supports floating-point dtypes, X2 got: ", x2.scalar_type());
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  const int64_t mode = compute_mode.value_or(0);
  TORCH_CHECK(mode >= 0 && mode <= 2, "possible modes: 0, 1, 2, but was: ", mode);
}

void check_same_dtype(const at::Tensor& expected, const at::Tensor& found) {
  TORCH_CHECK(found.scalar_type() == expected.scalar_type(), "expected scalar type ",
              expected.scalar_type(), " but found ", found.scalar_type());
}

// The broadcast batch dims of x1 and x2 (all but their last two).
std::vector<int64_t> batch_sizes(const at::Tensor& x1, const at::Tensor& x2) {
  return at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
}

std::vector<int64_t> with_tail(std::vector<int64_t> sizes, std::initializer_list<int64_t> tail) {
  sizes.insert(sizes.end(), tail);
  return sizes;
}

}  // namespace

at::Tensor cdist_forward(const at::Tensor& x1, const at::Tensor& x2, double p,
                         std::optional<int64_t> compute_mode) {
  check_same_device({x1, x2});
  check_cdist_operands(x1, x2, p, compute_mode);
  const int64_t mode = compute_mode.value_or(0);
  const int64_t rows1 = x1.size(-2), rows2 = x2.size(-2), columns = x1.size(-1);
  if (p == 2 && (mode == 1 || (mode == 0 && (rows1 > 25 || rows2 > 25)))) {
    return at::_euclidean_dist(x1, x2);
  }
  const std::vector<int64_t> batch = batch_sizes(x1, x2);
  const std::vector<int64_t> output_sizes = with_tail(batch, {rows1, rows2});
  if (rows1 == 0 || rows2 == 0 || c10::multiply_integers(batch) == 0) {
    return at::empty(output_sizes, x1.options());
  }
  if (columns == 0) return at::zeros(output_sizes, x1.options());
  check_dispatch_dtype("cdist", x1.scalar_type(), kFloatAndDoubleTypes);
  check_same_dtype(x1, x2);
  const std::vector<int64_t> pair_sizes = with_tail(batch, {rows1, rows2, columns});
  at::Tensor first = x1.expand(with_tail(batch, {rows1, columns})).unsqueeze(-2).expand(pair_sizes);
  at::Tensor second = x2.expand(with_tail(batch, {rows2, columns})).unsqueeze(-3).expand(pair_sizes);
  at::Tensor result = at::empty(output_sizes, x1.options());
  launch_distance("aten::_cdist_forward", p, first, second, result);
  return result;
}

at::Tensor cdist_backward(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2,
                          double p, const at::Tensor& cdist) {
  check_same_device({grad, x1, x2, cdist});
  const int64_t rows1 = x1.size(-2), rows2 = x2.size(-2), columns = x1.size(-1);
  const std::vector<int64_t> batch = batch_sizes(x1, x2);
  if (rows1 == 0 || rows2 == 0 || columns == 0 || c10::multiply_integers(batch) == 0) {
    return at::zeros_like(x1, x1.options());
  }
  check_dispatch_dtype("cdist_backward", x1.scalar_type(), kFloatAndDoubleTypes);
  check_same_dtype(x1, x2);
  check_same_dtype(x1, grad);
  check_same_dtype(x1, cdist);
  const std::vector<int64_t> pair_sizes = with_tail(batch, {rows1, rows2, columns});
  at::Tensor first = x1.expand(with_tail(batch, {rows1, columns})).unsqueeze(-2).expand(pair_sizes);
  at::Tensor second = x2.expand(with_tail(batch, {rows2, columns})).unsqueeze(-3).expand(pair_sizes);
  at::Tensor grads = grad.unsqueeze(-1).expand(pair_sizes);
  at::Tensor distances = cdist.unsqueeze(-1).expand(pair_sizes);
  at::Tensor result = at::empty(with_tail(batch, {rows1, columns}), x1.options());
  const Norm norm = norm_of(p);
  const int64_t rank = static_cast<int64_t>(pair_sizes.size());
  const int64_t reduced[] = {rank - 2};
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kSum;
  spec.element = [norm](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ValueId difference = builder.binary(OpCode::kSubtract, context.inputs[0], context.inputs[1]);
    ValueId p = builder.cast(context.scalars[0], builder.dtype_of(difference));
    return distance_derivative(builder, norm, difference, context.inputs[2], context.inputs[3], p);
  };
  const at::Tensor inputs[] = {first, second, grads, distances};
  const c10::Scalar scalars[] = {scalar_as(p, x1.scalar_type())};
  launch_reduction("aten::_cdist_backward", norm_key("cdist_backward", norm), inputs,
                   {keepdim_view(result, rank, reduced)}, reduced, scalars, spec);
  return result;
}

at::Tensor pdist_forward(const at::Tensor& self, double p) {
  TORCH_CHECK(self.is_contiguous(), "_pdist_forward requires contiguous input");
  const int64_t rows = self.size(0);
  if (rows <= 1) return at::empty({0}, self.options());
  const int64_t pairs = rows * (rows - 1) / 2;
  if (self.size(1) == 0) return at::zeros({pairs}, self.options());
  check_dispatch_dtype("pdist", self.scalar_type(), kFloatAndDoubleTypes);
  // Rows i < j, i major: the CPU's order of the pairs.
  at::Tensor indices = at::triu_indices(rows, rows, 1, at::TensorOptions().dtype(at::kLong)).to(self.device());
  at::Tensor first = at::index_select(self, 0, indices[0]);
  at::Tensor second = at::index_select(self, 0, indices[1]);
  at::Tensor result = at::empty({pairs}, self.options());
  launch_distance("aten::_pdist_forward", p, first, second, result);
  return result;
}

at::Tensor pdist_backward(const at::Tensor& grad, const at::Tensor& self, double p,
                          const at::Tensor& pdist) {
  TORCH_CHECK(self.is_contiguous(), "_pdist_backward requires self to be contiguous");
  TORCH_CHECK(pdist.is_contiguous(), "_pdist_backward requires pdist to be contiguous");
  check_same_device({grad, self, pdist});
  at::Tensor result = at::zeros_like(self, LEGACY_CONTIGUOUS_MEMORY_FORMAT);
  const int64_t rows = self.size(0), columns = self.size(1);
  if (p == 0 || rows <= 1 || columns == 0) return result;
  check_dispatch_dtype("pdist_backward", self.scalar_type(), kFloatAndDoubleTypes);
  check_same_dtype(self, grad);
  check_same_dtype(self, pdist);
  at::Tensor indices = at::triu_indices(rows, rows, 1, at::TensorOptions().dtype(at::kLong)).to(self.device());
  const int64_t pairs = indices.size(1);
  at::Tensor first = at::index_select(self, 0, indices[0]);
  at::Tensor second = at::index_select(self, 0, indices[1]);
  at::Tensor grads = grad.unsqueeze(1).expand({pairs, columns});
  at::Tensor distances = pdist.unsqueeze(1).expand({pairs, columns});
  at::Tensor derivatives = at::empty({pairs, columns}, self.options());
  const Norm norm = norm_of(p);
  const c10::Scalar scalars[] = {scalar_as(p, self.scalar_type())};
  const at::Tensor inputs[] = {first, second, grads, distances};
  launch_elementwise("aten::_pdist_backward", norm_key("pdist_backward", norm), inputs,
                     {derivatives}, scalars, [norm](ElementwiseContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    ValueId difference = builder.binary(OpCode::kSubtract, context.inputs[0], context.inputs[1]);
    ValueId p = builder.cast(context.scalars[0], builder.dtype_of(difference));
    return {distance_derivative(builder, norm, difference, context.inputs[2], context.inputs[3], p)};
  });
  // Row i gains the pair's derivative, row j loses it (its difference is
  // the negation, and every derivative is odd in it).
  result.index_add_(0, indices[0], derivatives);
  result.index_add_(0, indices[1], derivatives, -1);
  return result;
}

}  // namespace kiln::torch_integration::compiled
