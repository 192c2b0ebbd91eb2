// Layer and group norm, forward and backward (batch norm: batch_norm_ops.cc).
#include "kiln/aten/compiled/nn/norm/normalization_ops.h"

#include <ATen/native/cpu/mixed_data_type.h>
#include <ATen/native/Resize.h>
#include <ATen/native/layer_norm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include <limits>
#include <string>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/nn/norm/normalization_rows.h"
#include "kiln/aten/compiled/nn/norm/normalization_support.h"
#include "kiln/aten/compiled/launch/reduction.h"

namespace kiln::torch_integration::compiled {

using namespace normalization;

namespace {

// The plain normalization kernel's element: inputs x, mean, rstd, then the
// weight and bias when present.
ValueId affine_element(ElementwiseContext& context, Affine affine, DType compute, bool has_weight, bool has_bias) {
  ir::Builder& builder = context.builder;
  ValueId x = builder.cast(context.inputs[0], compute);
  int next = 3;
  ValueId weight = has_weight ? context.inputs[next++] : ir::kNoValue;
  ValueId bias = has_bias ? context.inputs[next++] : ir::kNoValue;
  return normalized_element(builder, affine, compute, x, context.inputs[1], context.inputs[2], weight, bias);
}

// ------------------------------------------------------------ layer norm

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_forward(
    const at::Tensor& input, at::IntArrayRef normalized_shape, const at::Tensor& weight,
    const at::Tensor& bias, double eps) {
  const char* op_name = "aten::native_layer_norm";
  auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, weight, bias);
  check_same_device({input, weight, bias});
  check_floating(input, "LayerNormKernelImpl");
  const bool mixed = at::native::is_mixed_type(input, weight, bias);
  if (mixed) at::native::check_mixed_data_type(input, weight, bias);
  const at::ScalarType param = at::native::param_scalar_type(input, mixed);
  const int64_t rank = input.dim();
  const int64_t axis = rank - static_cast<int64_t>(normalized_shape.size());
  c10::DimVector stat_shape(input.sizes().begin(), input.sizes().begin() + axis);
  stat_shape.resize(rank, 1);

  at::Tensor output = at::empty(input.sizes(), input.options(), at::MemoryFormat::Contiguous);
  at::Tensor mean = at::empty(stat_shape, input.options().dtype(param));
  at::Tensor rstd = at::empty(stat_shape, input.options().dtype(param));
  if (M == 0) return {output, mean, rstd};
  if (N == 0) {
    mean.zero_();
    rstd.fill_(std::numeric_limits<double>::quiet_NaN());
    return {output, mean, rstd};
  }
  const at::ScalarType accumulate = accumulate_type(input.scalar_type());
  const DType compute = compute_of(accumulate);
  const c10::DimVector reduced = range_dims(axis, rank);
  const bool has_weight = weight.defined(), has_bias = bias.defined();
  if (rows_suit_row_kernel({input, output}, reduced)) {
    const std::string key = std::string("layer_norm_row") + (has_weight ? "_w" : "") + (has_bias ? "_b" : "");
    normalize_rows(op_name, key, Affine::kLayerNorm, input, has_weight ? weight.expand(input.sizes()) : weight,
                   has_bias ? bias.expand(input.sizes()) : bias, reduced, static_cast<double>(N), eps, compute, output,
                   mean, rstd);
    return {output, mean, rstd};
  }
  at::Tensor mean_value = accumulate_buffer(mean, accumulate);
  at::Tensor rstd_value = accumulate_buffer(rstd, accumulate);
  const c10::Scalar count(static_cast<double>(N));

  std::vector<at::Tensor> mean_outputs = {mean_value};
  if (!mean_value.is_same(mean)) mean_outputs.push_back(mean);
  launch_sum(op_name, "layer_norm_mean", {input}, mean_outputs, reduced, {count},
             [compute](ReductionContext& context) { return context.builder.cast(context.inputs[0], compute); },
             [compute, outputs = mean_outputs.size()](ReductionContext& context, ValueId sum) {
               ValueId mean = context.builder.binary(OpCode::kDivide, sum, scalar_as(context, 0, compute));
               return std::vector<ValueId>(outputs, mean);
             });
  const at::Tensor mean_full = mean_value.expand(input.sizes());

  std::vector<at::Tensor> rstd_outputs = {rstd_value};
  if (!rstd_value.is_same(rstd)) rstd_outputs.push_back(rstd);
  launch_rstd(op_name, "layer_norm_rstd", input, mean_full, rstd_outputs, reduced, count, eps, compute);

  // (x * rstd - rstd * mean) * weight + bias, as ATen's CPU kernel.
  std::vector<at::Tensor> inputs = {input, mean_full, rstd_value.expand(input.sizes())};
  if (has_weight) inputs.push_back(weight.expand(input.sizes()));
  if (has_bias) inputs.push_back(bias.expand(input.sizes()));
  std::string key = std::string("layer_norm") + (has_weight ? "_w" : "") + (has_bias ? "_b" : "");
  launch_elementwise(op_name, key, inputs, {output}, {},
                     [compute, has_weight, has_bias](ElementwiseContext& context) -> std::vector<ValueId> {
                       return {affine_element(context, Affine::kLayerNorm, compute, has_weight, has_bias)};
                     });
  return {output, mean, rstd};
}

// A layer-norm input as its backward sees it: rows of the normalized shape
// (dims axis..rank-1), each with its mean and rstd, broadcast to the input.
struct LayerNormRows {
  int64_t rank, axis;
  at::ScalarType accumulate;
  DType compute;
  c10::DimVector stat_shape;  // the input's batch dims, then 1s
  at::Tensor mean_full, rstd_full, weight_full;  // weight_full: undefined without a weight
};

// grad_input by reductions over each row (when the row kernel does not suit
// the layout): ds = sum(dy * w * x), db = sum(dy * w) per row; then
// dx = rstd * dy * w + b * x + c with b = (db * mean - ds) * rstd^3 / N
// and c = -b * mean - db * rstd / N, as ATen's CPU kernel.
void layer_norm_backward_input_reduced(const char* op_name, const at::Tensor& grad_out, const at::Tensor& input,
                                       const LayerNormRows& rows, int64_t N, const at::Tensor& grad_input) {
  const DType compute = rows.compute;
  const bool has_weight = rows.weight_full.defined();
  const c10::DimVector reduced = range_dims(rows.axis, rows.rank);
  std::vector<at::Tensor> row_inputs = {grad_out, input};
  if (has_weight) row_inputs.push_back(rows.weight_full);
  auto scaled_grad = [compute, has_weight](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ValueId g = builder.cast(context.inputs[0], compute);
    if (has_weight) g = builder.binary(OpCode::kMultiply, g, builder.cast(context.inputs[2], compute));
    return g;
  };
  at::Tensor ds = at::empty(rows.stat_shape, input.options().dtype(rows.accumulate));
  at::Tensor db = at::empty(rows.stat_shape, input.options().dtype(rows.accumulate));
  launch_sum(op_name, has_weight ? "layer_norm_backward_ds_w" : "layer_norm_backward_ds", row_inputs,
             {ds}, reduced, {},
             [scaled_grad, compute](ReductionContext& context) {
               return context.builder.binary(OpCode::kMultiply, scaled_grad(context),
                                             context.builder.cast(context.inputs[1], compute));
             },
             nullptr);
  launch_sum(op_name, has_weight ? "layer_norm_backward_db_w" : "layer_norm_backward_db", row_inputs,
             {db}, reduced, {}, scaled_grad, nullptr);

  std::vector<at::Tensor> inputs = {grad_out, input, rows.mean_full, rows.rstd_full, ds.expand(input.sizes()),
                                    db.expand(input.sizes())};
  if (has_weight) inputs.push_back(rows.weight_full);
  const c10::Scalar count(static_cast<double>(N));
  launch_elementwise(
      op_name, has_weight ? "layer_norm_backward_input_w" : "layer_norm_backward_input", inputs,
      {grad_input}, {count}, [compute, has_weight](ElementwiseContext& context) -> std::vector<ValueId> {
        ir::Builder& builder = context.builder;
        auto value = [&](int index) { return builder.cast(context.inputs[index], compute); };
        ValueId dy = value(0), x = value(1), mean_value = value(2), a = value(3);
        ValueId ds_value = value(4), db_value = value(5);
        ValueId n = builder.cast(context.scalars[0], compute);
        ValueId g = has_weight ? builder.binary(OpCode::kMultiply, dy, value(6)) : dy;
        return {normalized_grad_input(builder, g, x, mean_value, a, ds_value, db_value, n)};
      });
}

// grad_weight = sum over the batch dims of dy * (x - mean) * rstd.
void layer_norm_backward_weight(const char* op_name, const at::Tensor& grad_out, const at::Tensor& input,
                                const LayerNormRows& rows, const at::Tensor& grad_weight) {
  const DType compute = rows.compute;
  const c10::DimVector batch = range_dims(0, rows.axis);
  launch_sum(op_name, "layer_norm_backward_weight", {grad_out, input, rows.mean_full, rows.rstd_full},
             {keepdim_view(grad_weight, rows.rank, batch)}, batch, {},
             [compute](ReductionContext& context) {
               ir::Builder& builder = context.builder;
               auto value = [&](int index) { return builder.cast(context.inputs[index], compute); };
               ValueId centered = builder.binary(OpCode::kSubtract, value(1), value(2));
               return builder.binary(OpCode::kMultiply, value(0), builder.binary(OpCode::kMultiply, centered, value(3)));
             },
             nullptr);
}

// grad_bias = sum over the batch dims of dy.
void layer_norm_backward_bias(const char* op_name, const at::Tensor& grad_out, const LayerNormRows& rows,
                              const at::Tensor& grad_bias) {
  const DType compute = rows.compute;
  const c10::DimVector batch = range_dims(0, rows.axis);
  launch_sum(op_name, "layer_norm_backward_bias", {grad_out}, {keepdim_view(grad_bias, rows.rank, batch)},
             batch, {},
             [compute](ReductionContext& context) { return context.builder.cast(context.inputs[0], compute); },
             nullptr);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, at::IntArrayRef normalized_shape,
    const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& weight, const at::Tensor& bias,
    std::array<bool, 3> mask) {
  const char* op_name = "aten::native_layer_norm_backward";
  auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, weight, bias);
  check_same_device({grad_out, input, mean, rstd, weight, bias});
  check_floating(input, "LayerNormBackwardKernelImpl");
  TORCH_CHECK(grad_out.sizes().equals(input.sizes()), "native_layer_norm_backward: grad_out of shape ",
              grad_out.sizes(), " does not match the input's shape ", input.sizes());
  TORCH_CHECK(mean.numel() == M && rstd.numel() == M, "native_layer_norm_backward: mean and rstd "
              "should have ", M, " elements");
  const int64_t rank = input.dim();
  const int64_t axis = rank - static_cast<int64_t>(normalized_shape.size());
  const bool mixed = at::native::is_mixed_type(input, weight, bias);
  const at::ScalarType param = at::native::param_scalar_type(input, mixed);
  at::Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) grad_input = at::empty(input.sizes(), input.options(), at::MemoryFormat::Contiguous);
  auto param_options = [&](const at::Tensor& like) {
    return like.defined() ? like.options() : input.options().dtype(param);
  };
  if (mask[1]) grad_weight = at::empty(normalized_shape, param_options(weight));
  if (mask[2]) grad_bias = at::empty(normalized_shape, param_options(bias));
  if (M == 0 || N == 0) {
    if (grad_weight.defined()) grad_weight.zero_();
    if (grad_bias.defined()) grad_bias.zero_();
    return {grad_input, grad_weight, grad_bias};
  }
  LayerNormRows rows{rank, axis, accumulate_type(input.scalar_type()), {}, {}, {}, {}, {}};
  rows.compute = compute_of(rows.accumulate);
  rows.stat_shape.assign(input.sizes().begin(), input.sizes().begin() + axis);
  rows.stat_shape.resize(rank, 1);
  rows.mean_full = mean.reshape(rows.stat_shape).expand(input.sizes());
  rows.rstd_full = rstd.reshape(rows.stat_shape).expand(input.sizes());
  if (weight.defined()) rows.weight_full = weight.expand(input.sizes());

  if (mask[0] && rows_suit_row_kernel({grad_out, input, grad_input}, range_dims(axis, rank))) {
    layer_norm_backward_input_rows(op_name, grad_out, input, rows.mean_full, rows.rstd_full, rows.weight_full,
                                   axis, static_cast<double>(N), rows.compute, grad_input);
  } else if (mask[0]) {
    layer_norm_backward_input_reduced(op_name, grad_out, input, rows, N, grad_input);
  }
  if (mask[1]) layer_norm_backward_weight(op_name, grad_out, input, rows, grad_weight);
  if (mask[2]) layer_norm_backward_bias(op_name, grad_out, rows, grad_bias);
  return {grad_input, grad_weight, grad_bias};
}

// ------------------------------------------------------------ group norm

void check_group_norm_inputs(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                             int64_t C, int64_t group) {
  TORCH_CHECK(group > 0, "Expected num groups to be greater than 0, got ", group);
  TORCH_CHECK(C % group == 0, "Expected number of channels in input to be divisible by ",
              "num_groups, but got input of shape ", input.sizes(), " and num_groups=", group);
  TORCH_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == C),
              "Expected weight to be a vector of size equal to the number of ",
              "channels in input, but got weight of shape ", weight.sizes(), " and input of shape ",
              input.sizes());
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.numel() == C),
              "Expected bias to be a vector of size equal to the number of ",
              "channels in input, but got bias of shape ", bias.sizes(), " and input of shape ",
              input.sizes());
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(
    const at::Tensor& input, at::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, double eps) {
  return layer_norm_forward(input, normalized_shape, value_or_undefined(weight), value_or_undefined(bias), eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, at::IntArrayRef normalized_shape,
    const at::Tensor& mean, const at::Tensor& rstd, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, std::array<bool, 3> output_mask) {
  return layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, value_or_undefined(weight),
                             value_or_undefined(bias), output_mask);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight_opt,
    const std::optional<at::Tensor>& bias_opt, int64_t N, int64_t C, int64_t HxW, int64_t group,
    double eps) {
  const char* op_name = "aten::native_group_norm";
  const at::Tensor& weight = value_or_undefined(weight_opt);
  const at::Tensor& bias = value_or_undefined(bias_opt);
  check_group_norm_inputs(input, weight, bias, C, group);
  check_floating(input, "GroupNormKernelImpl");
  check_same_device({input, weight, bias});
  TORCH_CHECK(input.numel() == N * C * HxW, "native_group_norm: expected an input of N * C * HxW = ",
              N * C * HxW, " elements, got ", input.numel());
  const bool mixed = at::native::is_mixed_type(input, weight, bias);
  if (mixed) at::native::check_mixed_data_type(input, weight, bias);
  const at::ScalarType param = at::native::param_scalar_type(input, mixed);
  at::Tensor output = at::empty_like(input, input.suggest_memory_format());
  at::Tensor mean = at::empty({N, group}, input.options().dtype(param));
  at::Tensor rstd = at::empty({N, group}, input.options().dtype(param));
  if (input.numel() == 0) {
    if (mean.numel() != 0) {
      mean.zero_();
      rstd.fill_(std::numeric_limits<double>::quiet_NaN());
    }
    return {output, mean, rstd};
  }
  const int64_t D = C / group;
  const at::Tensor x = input.reshape({N, group, D, HxW});
  const at::Tensor y = output.view({N, group, D, HxW});
  const at::ScalarType accumulate = accumulate_type(input.scalar_type());
  const DType compute = compute_of(accumulate);
  const bool has_weight = weight.defined(), has_bias = bias.defined();
  auto per_channel = [&](const at::Tensor& parameter) {
    return parameter.defined() ? parameter.view({1, group, D, 1}).expand(x.sizes()) : parameter;
  };
  if (rows_suit_row_kernel({x, y}, {2, 3})) {
    const std::string key = std::string("group_norm_row") + (has_weight ? "_w" : "") + (has_bias ? "_b" : "");
    normalize_rows(op_name, key, Affine::kGroupNorm, x, per_channel(weight), per_channel(bias), {2, 3},
                   static_cast<double>(D * HxW), eps, compute, y, mean.view({N, group, 1, 1}),
                   rstd.view({N, group, 1, 1}));
    return {output, mean, rstd};
  }
  at::Tensor mean_value = accumulate_buffer(mean, accumulate);
  at::Tensor rstd_value = accumulate_buffer(rstd, accumulate);
  const int64_t reduced[] = {2, 3};
  auto keep = [&](const at::Tensor& stat) { return stat.view({N, group, 1, 1}); };
  const c10::Scalar count(static_cast<double>(D * HxW));

  std::vector<at::Tensor> mean_outputs = {keep(mean_value)};
  if (!mean_value.is_same(mean)) mean_outputs.push_back(keep(mean));
  launch_sum(op_name, "group_norm_mean", {x}, mean_outputs, reduced, {count},
             [compute](ReductionContext& context) { return context.builder.cast(context.inputs[0], compute); },
             [compute, outputs = mean_outputs.size()](ReductionContext& context, ValueId sum) {
               ValueId value = context.builder.binary(OpCode::kDivide, sum, scalar_as(context, 0, compute));
               return std::vector<ValueId>(outputs, value);
             });
  const at::Tensor mean_full = keep(mean_value).expand(x.sizes());
  std::vector<at::Tensor> rstd_outputs = {keep(rstd_value)};
  if (!rstd_value.is_same(rstd)) rstd_outputs.push_back(keep(rstd));
  launch_rstd(op_name, "group_norm_rstd", x, mean_full, rstd_outputs, reduced, count, eps, compute);

  std::vector<at::Tensor> inputs = {x, mean_full, keep(rstd_value).expand(x.sizes())};
  if (has_weight) inputs.push_back(per_channel(weight));
  if (has_bias) inputs.push_back(per_channel(bias));
  std::string key = std::string("group_norm") + (has_weight ? "_w" : "") + (has_bias ? "_b" : "");
  launch_elementwise(op_name, key, inputs, {y}, {},
                     [compute, has_weight, has_bias](ElementwiseContext& context) -> std::vector<ValueId> {
                       return {affine_element(context, Affine::kGroupNorm, compute, has_weight, has_bias)};
                     });
  return {output, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight_opt, int64_t N, int64_t C,
    int64_t HxW, int64_t group, std::array<bool, 3> mask) {
  const char* op_name = "aten::native_group_norm_backward";
  const at::Tensor& weight = value_or_undefined(weight_opt);
  check_group_norm_inputs(input, weight, at::Tensor(), C, group);
  check_floating(input, "GroupNormBackwardKernelImpl");
  check_same_device({grad_out, input, mean, rstd, weight});
  TORCH_CHECK(input.numel() == N * C * HxW && grad_out.sizes().equals(input.sizes()),
              "native_group_norm_backward: expected input and grad_out of N * C * HxW elements");
  TORCH_CHECK(mean.numel() == N * group && rstd.numel() == N * group,
              "native_group_norm_backward: expected mean and rstd of N * group elements");
  const bool mixed = at::native::is_mixed_type(input, weight);
  if (mixed) at::native::check_mixed_data_type(input, weight);
  const at::ScalarType param = at::native::param_scalar_type(input, mixed);
  at::Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) grad_input = at::empty_like(input, input.suggest_memory_format());
  if (mask[1]) grad_weight = at::empty({C}, input.options().dtype(param));
  if (mask[2]) grad_bias = at::empty({C}, input.options().dtype(param));
  if (input.numel() == 0) {
    if (grad_weight.defined()) grad_weight.zero_();
    if (grad_bias.defined()) grad_bias.zero_();
    return {grad_input, grad_weight, grad_bias};
  }
  const int64_t D = C / group;
  const at::Tensor x = input.reshape({N, group, D, HxW});
  const at::Tensor dy = grad_out.reshape({N, group, D, HxW});
  const at::ScalarType accumulate = accumulate_type(input.scalar_type());
  const DType compute = compute_of(accumulate);
  const at::Tensor mean_full = mean.reshape({N, group, 1, 1}).expand(x.sizes());
  const at::Tensor rstd_full = rstd.reshape({N, group, 1, 1}).expand(x.sizes());
  const bool has_weight = weight.defined();
  const at::Tensor weight_full = has_weight ? weight.view({1, group, D, 1}).expand(x.sizes()) : at::Tensor();

  if (mask[0]) {
    // As layer norm over each (n, group), with the per-channel weight inside
    // the sums: ds = sum(dy * w * x), db = sum(dy * w).
    const int64_t reduced[] = {2, 3};
    std::vector<at::Tensor> sum_inputs = {dy, x};
    if (has_weight) sum_inputs.push_back(weight_full);
    auto scaled_grad = [compute, has_weight](ReductionContext& context) {
      ir::Builder& builder = context.builder;
      ValueId g = builder.cast(context.inputs[0], compute);
      if (has_weight) g = builder.binary(OpCode::kMultiply, g, builder.cast(context.inputs[2], compute));
      return g;
    };
    at::Tensor ds = at::empty({N, group, 1, 1}, input.options().dtype(accumulate));
    at::Tensor db = at::empty({N, group, 1, 1}, input.options().dtype(accumulate));
    launch_sum(op_name, has_weight ? "group_norm_backward_ds_w" : "group_norm_backward_ds", sum_inputs, {ds},
               reduced, {},
               [scaled_grad, compute](ReductionContext& context) {
                 return context.builder.binary(OpCode::kMultiply, scaled_grad(context),
                                               context.builder.cast(context.inputs[1], compute));
               },
               nullptr);
    launch_sum(op_name, has_weight ? "group_norm_backward_db_w" : "group_norm_backward_db", sum_inputs, {db},
               reduced, {}, scaled_grad, nullptr);
    std::vector<at::Tensor> inputs = {dy, x, mean_full, rstd_full, ds.expand(x.sizes()), db.expand(x.sizes())};
    if (has_weight) inputs.push_back(weight_full);
    const c10::Scalar count(static_cast<double>(D * HxW));
    launch_elementwise(
        op_name, has_weight ? "group_norm_backward_input_w" : "group_norm_backward_input", inputs,
        {grad_input.view({N, group, D, HxW})}, {count},
        [compute, has_weight](ElementwiseContext& context) -> std::vector<ValueId> {
          ir::Builder& builder = context.builder;
          auto value = [&](int index) { return builder.cast(context.inputs[index], compute); };
          ValueId g = value(0), x_value = value(1), mean_value = value(2), a = value(3);
          ValueId ds_value = value(4), db_value = value(5);
          ValueId n = builder.cast(context.scalars[0], compute);
          if (has_weight) g = builder.binary(OpCode::kMultiply, g, value(6));
          return {normalized_grad_input(builder, g, x_value, mean_value, a, ds_value, db_value, n)};
        });
  }
  const int64_t channel_reduced[] = {0, 3};
  auto keep_channel = [&](const at::Tensor& vector) { return vector.view({1, group, D, 1}); };
  if (mask[1]) {
    launch_sum(op_name, "group_norm_backward_weight", {dy, x, mean_full, rstd_full}, {keep_channel(grad_weight)},
               channel_reduced, {},
               [compute](ReductionContext& context) {
                 ir::Builder& builder = context.builder;
                 auto value = [&](int index) { return builder.cast(context.inputs[index], compute); };
                 ValueId centered = builder.binary(OpCode::kSubtract, value(1), value(2));
                 return builder.binary(OpCode::kMultiply, value(0), builder.binary(OpCode::kMultiply, centered, value(3)));
               },
               nullptr);
  }
  if (mask[2]) {
    launch_sum(op_name, "group_norm_backward_bias", {dy}, {keep_channel(grad_bias)}, channel_reduced, {},
               [compute](ReductionContext& context) { return context.builder.cast(context.inputs[0], compute); },
               nullptr);
  }
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace kiln::torch_integration::compiled
