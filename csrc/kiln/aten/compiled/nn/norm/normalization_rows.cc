#include "kiln/aten/compiled/nn/norm/normalization_rows.h"

#include <vector>

#include "kiln/aten/compiled/nn/norm/normalization_support.h"
#include "kiln/aten/compiled/launch/reduction.h"

namespace kiln::torch_integration::compiled::normalization {

namespace {

using Values = std::vector<ValueId>;

// Launch scalars of both kernels: the row's element count, then eps.
enum Scalar { kCount, kEps };

}  // namespace

ValueId normalized_element(ir::Builder& builder, Affine affine, DType compute, ValueId x, ValueId mean, ValueId rstd,
                           ValueId weight, ValueId bias) {
  ValueId scale = rstd;
  if (affine == Affine::kGroupNorm && weight != ir::kNoValue) {
    scale = builder.binary(OpCode::kMultiply, scale, builder.cast(weight, compute));
  }
  ValueId shift = builder.unary(OpCode::kNegate, builder.binary(OpCode::kMultiply, scale, mean));
  if (affine == Affine::kGroupNorm) {
    if (bias != ir::kNoValue) shift = builder.binary(OpCode::kAdd, shift, builder.cast(bias, compute));
    return builder.binary(OpCode::kAdd, builder.binary(OpCode::kMultiply, x, scale), shift);
  }
  ValueId y = builder.binary(OpCode::kAdd, builder.binary(OpCode::kMultiply, x, scale), shift);
  if (weight != ir::kNoValue) y = builder.binary(OpCode::kMultiply, y, builder.cast(weight, compute));
  if (bias != ir::kNoValue) y = builder.binary(OpCode::kAdd, y, builder.cast(bias, compute));
  return y;
}

void normalize_rows(const char* op_name, std::string_view key, Affine affine, const at::Tensor& input,
                    const at::Tensor& weight, const at::Tensor& bias, c10::IntArrayRef reduced, double count,
                    double eps, DType compute, const at::Tensor& output, const at::Tensor& mean,
                    const at::Tensor& rstd) {
  const bool has_weight = weight.defined(), has_bias = bias.defined();
  std::vector<at::Tensor> inputs = {input};
  if (has_weight) inputs.push_back(weight);
  if (has_bias) inputs.push_back(bias);
  const at::IntArrayRef sizes = input.sizes();
  const c10::Scalar scalars[] = {count, eps};
  launch_row_reduction(
      op_name, key, inputs, {output, mean.expand(sizes), rstd.expand(sizes)}, reduced, scalars,
      [affine, compute, has_weight, has_bias](ir::Builder& builder, const Values& loads,
                                              const Values& scalar_values) -> Values {
        ValueId x = builder.cast(loads[0], compute);
        ValueId n = builder.cast(scalar_values[kCount], compute);
        ValueId sum = builder.stage_result(builder.reduce_stage(ir::ReduceOp::kSum, x));
        ValueId mean_value = builder.binary(OpCode::kDivide, sum, n);
        ValueId deviation = builder.binary(OpCode::kSubtract, x, mean_value);
        ValueId squares = builder.stage_result(
            builder.reduce_stage(ir::ReduceOp::kSum, builder.binary(OpCode::kMultiply, deviation, deviation)));
        ValueId var = builder.binary(OpCode::kMaximum, builder.binary(OpCode::kDivide, squares, n),
                                     builder.constant(0, compute));
        ValueId rstd_value = builder.unary(
            OpCode::kRsqrt, builder.binary(OpCode::kAdd, var, builder.cast(scalar_values[kEps], compute)));
        int next = 1;
        ValueId weight_value = has_weight ? loads[next++] : ir::kNoValue;
        ValueId bias_value = has_bias ? loads[next++] : ir::kNoValue;
        return {normalized_element(builder, affine, compute, x, mean_value, rstd_value, weight_value, bias_value),
                mean_value, rstd_value};
      },
      /*fixed_shape=*/false);
}

void layer_norm_backward_input_rows(const char* op_name, const at::Tensor& grad_out, const at::Tensor& input,
                                    const at::Tensor& mean_full, const at::Tensor& rstd_full,
                                    const at::Tensor& weight_full, int64_t axis, double count, DType compute,
                                    const at::Tensor& grad_input) {
  const bool has_weight = weight_full.defined();
  std::vector<at::Tensor> inputs = {grad_out, input, mean_full, rstd_full};
  if (has_weight) inputs.push_back(weight_full);
  const c10::DimVector reduced = range_dims(axis, input.dim());
  const c10::Scalar scalars[] = {count};
  launch_row_reduction(
      op_name, has_weight ? "layer_norm_backward_input_row_w" : "layer_norm_backward_input_row", inputs,
      {grad_input}, reduced, scalars,
      [compute, has_weight](ir::Builder& builder, const Values& loads, const Values& scalar_values) -> Values {
        auto value = [&](int index) { return builder.cast(loads[index], compute); };
        ValueId dy = value(0), x = value(1), mean_value = value(2), a = value(3);
        ValueId g = has_weight ? builder.binary(OpCode::kMultiply, dy, value(4)) : dy;
        ValueId ds =
            builder.stage_result(builder.reduce_stage(ir::ReduceOp::kSum, builder.binary(OpCode::kMultiply, g, x)));
        ValueId db = builder.stage_result(builder.reduce_stage(ir::ReduceOp::kSum, g));
        ValueId n = builder.cast(scalar_values[kCount], compute);
        return {normalized_grad_input(builder, g, x, mean_value, a, ds, db, n)};
      },
      /*fixed_shape=*/false);
}

}  // namespace kiln::torch_integration::compiled::normalization
