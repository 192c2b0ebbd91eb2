// Batch norm, forward (training and eval, running statistics updated in
// place) and backward (see batch_norm_ops.h).
#include "kiln/aten/compiled/nn/norm/batch_norm_ops.h"

#include <ATen/native/cpu/mixed_data_type.h>
#include <ATen/native/Resize.h>
#include <ATen/native/layer_norm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include <limits>
#include <string>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/nn/norm/normalization_support.h"
#include "kiln/aten/compiled/launch/reduction.h"

namespace kiln::torch_integration::compiled {

using namespace normalization;

namespace {

struct BatchNormArgs {
  at::Tensor weight, bias, running_mean, running_var;
};

void check_batch_norm_params(const at::Tensor& input, const BatchNormArgs& args) {
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected an input with at least 2 dims (N, C, ...), "
              "got ", input.dim());
  const int64_t channels = input.size(1);
  auto check = [channels](const char* name, const at::Tensor& tensor) {
    TORCH_CHECK(!tensor.defined() || tensor.numel() == channels, name, " should contain ", channels,
                " elements not ", tensor.numel());
  };
  check("running_mean", args.running_mean);
  check("running_var", args.running_var);
  check("weight", args.weight);
  check("bias", args.bias);
}

void batch_norm_into(const at::Tensor& input, const BatchNormArgs& args, bool training,
                     double momentum, double eps, const at::Tensor& output,
                     const at::Tensor& save_mean, const at::Tensor& save_invstd) {
  const char* op_name = "aten::native_batch_norm";
  const int64_t rank = input.dim();
  const c10::DimVector reduced = all_but(rank, 1);
  const at::ScalarType accumulate = accumulate_type(input.scalar_type());
  const DType compute = compute_of(accumulate);
  const at::IntArrayRef sizes = input.sizes();
  auto full = [&](const at::Tensor& vector) { return channel_view(vector, rank, 1).expand(sizes); };
  auto keep = [&](const at::Tensor& vector) { return channel_view(vector, rank, 1); };
  const bool has_weight = args.weight.defined(), has_bias = args.bias.defined();
  auto affine_inputs = [&](std::vector<at::Tensor>& inputs) {
    if (has_weight) inputs.push_back(full(args.weight));
    if (has_bias) inputs.push_back(full(args.bias));
  };
  // x * alpha + beta with alpha = invstd * w and beta = b - mean * alpha, as
  // ATen's contiguous CPU kernel; inputs from index 3 are w and b.
  auto normalize = [has_weight, has_bias, compute](ir::Builder& builder, ValueId x, ValueId mean,
                                                   ValueId invstd, const std::vector<ValueId>& values) {
    int next = 3;
    ValueId alpha = invstd;
    if (has_weight) alpha = builder.binary(OpCode::kMultiply, alpha, builder.cast(values[next++], compute));
    ValueId beta = builder.unary(OpCode::kNegate, builder.binary(OpCode::kMultiply, mean, alpha));
    if (has_bias) beta = builder.binary(OpCode::kAdd, builder.cast(values[next++], compute), beta);
    return builder.binary(OpCode::kAdd, builder.binary(OpCode::kMultiply, x, alpha), beta);
  };
  const std::string affine_key = std::string(has_weight ? "_w" : "") + (has_bias ? "_b" : "");

  if (!training) {
    TORCH_CHECK(args.running_mean.defined(), "running_mean must be defined in evaluation mode");
    TORCH_CHECK(args.running_var.defined(), "running_var must be defined in evaluation mode");
    if (input.numel() == 0) return;
    std::vector<at::Tensor> inputs = {input, full(args.running_mean), full(args.running_var)};
    affine_inputs(inputs);
    launch_elementwise(op_name, "batch_norm_eval" + affine_key, inputs, {output}, {eps},
                       [compute, normalize](ElementwiseContext& context) -> std::vector<ValueId> {
                         ir::Builder& builder = context.builder;
                         ValueId eps_value = builder.cast(context.scalars[0], compute);
                         ValueId invstd = builder.unary(
                             OpCode::kRsqrt,
                             builder.binary(OpCode::kAdd, builder.cast(context.inputs[2], compute), eps_value));
                         return {normalize(builder, builder.cast(context.inputs[0], compute),
                                           builder.cast(context.inputs[1], compute), invstd, context.inputs)};
                       });
    return;
  }

  TORCH_CHECK(input.numel() != 0, "input tensor must have at least one element, but got input_sizes = ",
              input.sizes());
  const int64_t count = input.numel() / input.size(1);
  at::Tensor mean = accumulate_buffer(save_mean, accumulate);
  at::Tensor invstd = accumulate_buffer(save_invstd, accumulate);
  std::vector<at::Tensor> mean_outputs = {keep(mean)};
  if (!mean.is_same(save_mean)) mean_outputs.push_back(keep(save_mean));
  const c10::Scalar n(static_cast<double>(count));
  launch_sum(op_name, "batch_norm_mean", {input}, mean_outputs, reduced, {n},
             [compute](ReductionContext& context) { return context.builder.cast(context.inputs[0], compute); },
             [compute, outputs = mean_outputs.size()](ReductionContext& context, ValueId sum) {
               ValueId value = context.builder.binary(OpCode::kDivide, sum, scalar_as(context, 0, compute));
               return std::vector<ValueId>(outputs, value);
             });

  // The sum of squared deviations: invstd (and its rounded copy) for the
  // output, the sum itself for running_var.
  const bool update_var = args.running_var.defined();
  at::Tensor var_sum = update_var ? at::empty({input.size(1)}, input.options().dtype(accumulate)) : at::Tensor();
  std::vector<at::Tensor> var_outputs = {keep(invstd)};
  const bool rounded_copy = !invstd.is_same(save_invstd);
  if (rounded_copy) var_outputs.push_back(keep(save_invstd));
  if (update_var) var_outputs.push_back(keep(var_sum));
  const c10::Scalar var_scalars[] = {n, eps};
  std::string var_key = std::string("batch_norm_invstd") + (rounded_copy ? "_r" : "") + (update_var ? "_v" : "");
  launch_sum(op_name, var_key, {input, full(mean)}, var_outputs, reduced, var_scalars,
             [compute](ReductionContext& context) {
               ir::Builder& builder = context.builder;
               ValueId deviation = builder.binary(OpCode::kSubtract, builder.cast(context.inputs[0], compute),
                                                  context.inputs[1]);
               return builder.binary(OpCode::kMultiply, deviation, deviation);
             },
             [compute, rounded_copy, update_var](ReductionContext& context, ValueId sum) {
               ir::Builder& builder = context.builder;
               ValueId var = builder.binary(OpCode::kDivide, sum, scalar_as(context, 0, compute));
               ValueId value = inverse_std(builder, var, scalar_as(context, 1, compute));
               std::vector<ValueId> results = {value};
               if (rounded_copy) results.push_back(value);
               if (update_var) results.push_back(sum);
               return results;
             });

  const bool update_mean = args.running_mean.defined();
  if (update_mean || update_var) {
    // running = momentum * statistic + (1 - momentum) * running, the
    // variance unbiased (sum / (n - 1)).
    std::vector<at::Tensor> inputs, outputs;
    if (update_mean) {
      inputs.push_back(args.running_mean);
      inputs.push_back(mean);
      outputs.push_back(args.running_mean);
    }
    if (update_var) {
      inputs.push_back(args.running_var);
      inputs.push_back(var_sum);
      outputs.push_back(args.running_var);
    }
    const c10::Scalar scalars[] = {momentum, static_cast<double>(count - 1)};
    std::string key = std::string("batch_norm_update") + (update_mean ? "_m" : "") + (update_var ? "_v" : "");
    launch_elementwise(op_name, key, inputs, outputs, scalars,
                       [update_mean, update_var](ElementwiseContext& context) -> std::vector<ValueId> {
                         ir::Builder& builder = context.builder;
                         std::vector<ValueId> results;
                         int next = 0;
                         auto blend = [&](bool unbiased) {
                           DType type = ir::compute_dtype(context.input_dtypes[next]);
                           ValueId running = context.inputs[next];
                           ValueId statistic = builder.cast(context.inputs[next + 1], type);
                           if (unbiased) {
                             statistic = builder.binary(OpCode::kDivide, statistic,
                                                        builder.cast(context.scalars[1], type));
                           }
                           ValueId m = builder.cast(context.scalars[0], type);
                           ValueId keep_part = builder.binary(
                               OpCode::kMultiply, builder.binary(OpCode::kSubtract, builder.constant(1, type), m),
                               running);
                           next += 2;
                           return builder.binary(OpCode::kAdd, builder.binary(OpCode::kMultiply, m, statistic),
                                                 keep_part);
                         };
                         if (update_mean) results.push_back(blend(false));
                         if (update_var) results.push_back(blend(true));
                         return results;
                       });
  }

  std::vector<at::Tensor> inputs = {input, full(mean), full(invstd)};
  affine_inputs(inputs);
  launch_elementwise(op_name, "batch_norm_train" + affine_key, inputs, {output}, {},
                     [compute, normalize](ElementwiseContext& context) -> std::vector<ValueId> {
                       ir::Builder& builder = context.builder;
                       return {normalize(builder, builder.cast(context.inputs[0], compute), context.inputs[1],
                                         context.inputs[2], context.inputs)};
                     });
}

// Output and statistics tensors as ATen's batch_norm_cpu allocates them.
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_outputs(const at::Tensor& input,
                                                                  const BatchNormArgs& args,
                                                                  bool training) {
  check_floating(input, "batch_norm");
  check_same_device({input, args.weight, args.bias, args.running_mean, args.running_var});
  check_batch_norm_params(input, args);
  const bool mixed = at::native::is_mixed_type(input, args.weight, args.bias, args.running_mean,
                                               args.running_var);
  if (mixed) {
    at::native::check_mixed_data_type(input, args.weight, args.bias, args.running_mean, args.running_var);
  }
  const at::ScalarType param = at::native::param_scalar_type(input, mixed);
  at::Tensor output = at::empty_like(input, input.suggest_memory_format());
  int64_t stats = training ? input.size(1) : 0;
  return {output, at::empty({stats}, input.options().dtype(param)),
          at::empty({stats}, input.options().dtype(param))};
}

BatchNormArgs batch_norm_args(const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                              const std::optional<at::Tensor>& running_mean,
                              const std::optional<at::Tensor>& running_var) {
  return {value_or_undefined(weight), value_or_undefined(bias), value_or_undefined(running_mean),
          value_or_undefined(running_var)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_forward(const at::Tensor& input,
                                                                  const BatchNormArgs& args,
                                                                  bool training, double momentum,
                                                                  double eps) {
  auto [output, save_mean, save_invstd] = batch_norm_outputs(input, args, training);
  batch_norm_into(input, args, training, momentum, eps, output, save_mean, save_invstd);
  return {output, save_mean, save_invstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_impl(
    const at::Tensor& grad_out, const at::Tensor& input, const BatchNormArgs& args,
    const at::Tensor& save_mean, const at::Tensor& save_invstd, bool train, double eps,
    std::array<bool, 3> mask) {
  const char* op_name = "aten::native_batch_norm_backward";
  check_floating(input, "batch_norm_backward_cpu");
  check_same_device({grad_out, input, args.weight, args.running_mean, args.running_var, save_mean, save_invstd});
  check_batch_norm_params(input, args);
  TORCH_CHECK(grad_out.sizes().equals(input.sizes()), "native_batch_norm_backward: grad_out of shape ",
              grad_out.sizes(), " does not match the input's shape ", input.sizes());
  const bool mixed = at::native::is_mixed_type(input, args.weight, args.running_mean, args.running_var,
                                               save_mean, save_invstd);
  if (mixed) {
    at::native::check_mixed_data_type(input, args.weight, args.running_mean, args.running_var,
                                      save_mean, save_invstd);
  }
  const at::ScalarType param = at::native::param_scalar_type(input, mixed);
  const int64_t channels = input.size(1);
  at::Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) grad_input = at::empty_like(input, input.suggest_memory_format());
  if (mask[1]) grad_weight = at::empty({channels}, input.options().dtype(param));
  if (mask[2]) grad_bias = at::empty({channels}, input.options().dtype(param));
  if (input.numel() == 0) {
    if (grad_weight.defined()) grad_weight.zero_();
    if (grad_bias.defined()) grad_bias.zero_();
    return {grad_input, grad_weight, grad_bias};
  }
  if (train) {
    TORCH_CHECK(save_mean.defined() && save_invstd.defined(),
                "native_batch_norm_backward: save_mean and save_invstd are required in training mode");
  } else {
    TORCH_CHECK(args.running_mean.defined() && args.running_var.defined(),
                "native_batch_norm_backward: running_mean and running_var are required in evaluation mode");
  }
  const int64_t rank = input.dim();
  const c10::DimVector reduced = all_but(rank, 1);
  const at::ScalarType accumulate = accumulate_type(input.scalar_type());
  const DType compute = compute_of(accumulate);
  const at::IntArrayRef sizes = input.sizes();
  auto full = [&](const at::Tensor& vector) { return channel_view(vector, rank, 1).expand(sizes); };
  auto keep = [&](const at::Tensor& vector) { return channel_view(vector, rank, 1); };
  const int64_t count = input.numel() / channels;
  const bool has_weight = args.weight.defined();

  // Per-channel mean and invstd as kernel inputs 2 and 3 (training: the
  // saved ones; evaluation: the running ones, invstd from the variance).
  const at::Tensor mean_full = full(train ? save_mean : args.running_mean);
  const at::Tensor stat_full = full(train ? save_invstd : args.running_var);
  auto invstd_of = [train, compute](ir::Builder& builder, ValueId stat, ValueId eps) {
    if (train) return builder.cast(stat, compute);
    return builder.unary(OpCode::kRsqrt, builder.binary(OpCode::kAdd, builder.cast(stat, compute), eps));
  };
  const c10::Scalar eps_scalar(eps);

  const bool need_sum = mask[2] || (mask[0] && train);
  const bool need_dot = mask[1] || (mask[0] && train);
  at::Tensor sum, dot;
  if (need_sum) {
    sum = accumulate_buffer(grad_bias.defined() ? grad_bias : at::empty({channels}, input.options().dtype(accumulate)),
                            accumulate);
    std::vector<at::Tensor> outputs = {keep(sum)};
    if (grad_bias.defined() && !grad_bias.is_same(sum)) outputs.push_back(keep(grad_bias));
    launch_sum(op_name, "batch_norm_backward_sum", {grad_out}, outputs, reduced, {},
               [compute](ReductionContext& context) { return context.builder.cast(context.inputs[0], compute); },
               nullptr);
  }
  if (need_dot) {
    // sum((x - mean) * dy * invstd): grad_weight itself.
    dot = accumulate_buffer(grad_weight.defined() ? grad_weight : at::empty({channels}, input.options().dtype(accumulate)),
                            accumulate);
    std::vector<at::Tensor> outputs = {keep(dot)};
    if (grad_weight.defined() && !grad_weight.is_same(dot)) outputs.push_back(keep(grad_weight));
    launch_sum(op_name, train ? "batch_norm_backward_dot" : "batch_norm_backward_dot_eval",
               {input, grad_out, mean_full, stat_full}, outputs, reduced, {eps_scalar},
               [compute, invstd_of](ReductionContext& context) {
                 ir::Builder& builder = context.builder;
                 auto value = [&](int index) { return builder.cast(context.inputs[index], compute); };
                 ValueId centered = builder.binary(OpCode::kSubtract, value(0), value(2));
                 ValueId invstd = invstd_of(builder, context.inputs[3], scalar_as(context, 0, compute));
                 return builder.binary(OpCode::kMultiply, builder.binary(OpCode::kMultiply, centered, value(1)),
                                       invstd);
               },
               nullptr);
  }
  if (mask[0]) {
    std::vector<at::Tensor> inputs = {input, grad_out, mean_full, stat_full};
    if (train) {
      inputs.push_back(full(sum));
      inputs.push_back(full(dot));
    }
    if (has_weight) inputs.push_back(full(args.weight));
    const c10::Scalar scalars[] = {eps, static_cast<double>(count)};
    std::string key = std::string(train ? "batch_norm_backward_input" : "batch_norm_backward_input_eval") +
                      (has_weight ? "_w" : "");
    launch_elementwise(
        op_name, key, inputs, {grad_input}, scalars,
        [train, has_weight, compute, invstd_of](ElementwiseContext& context) -> std::vector<ValueId> {
          ir::Builder& builder = context.builder;
          auto value = [&](int index) { return builder.cast(context.inputs[index], compute); };
          ValueId eps_value = builder.cast(context.scalars[0], compute);
          ValueId invstd = invstd_of(builder, context.inputs[3], eps_value);
          ValueId dy = value(1);
          ValueId scale = invstd;
          if (has_weight) scale = builder.binary(OpCode::kMultiply, scale, value(train ? 6 : 4));
          if (!train) return {builder.binary(OpCode::kMultiply, dy, scale)};
          // (dy - sum / n - (x - mean) * k) * invstd * w with
          // k = dot * invstd / n (dot already carries one invstd).
          ValueId n = builder.cast(context.scalars[1], compute);
          ValueId grad_mean = builder.binary(OpCode::kDivide, value(4), n);
          ValueId k = builder.binary(OpCode::kDivide, builder.binary(OpCode::kMultiply, value(5), invstd), n);
          ValueId projection = builder.binary(OpCode::kMultiply, builder.binary(OpCode::kSubtract, value(0), value(2)), k);
          ValueId centered = builder.binary(OpCode::kSubtract, builder.binary(OpCode::kSubtract, dy, grad_mean), projection);
          return {builder.binary(OpCode::kMultiply, centered, scale)};
        });
  }
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, bool training, double momentum, double eps) {
  return batch_norm_forward(input, batch_norm_args(weight, bias, running_mean, running_var), training,
                            momentum, eps);
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> native_batch_norm_out(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, bool training, double momentum, double eps,
    at::Tensor& out, at::Tensor& save_mean, at::Tensor& save_invstd) {
  BatchNormArgs args = batch_norm_args(weight, bias, running_mean, running_var);
  auto [output, mean, invstd] = batch_norm_outputs(input, args, training);
  auto check_dtype = [](const at::Tensor& given, const at::Tensor& expected) {
    TORCH_CHECK(given.scalar_type() == expected.scalar_type(), "Expected out tensor to have dtype ",
                expected.scalar_type(), ", but got ", given.scalar_type(), " instead");
  };
  check_dtype(out, output);
  check_dtype(save_mean, mean);
  check_dtype(save_invstd, invstd);
  at::native::resize_output(out, input.sizes());
  if (training) {
    at::native::resize_output(save_mean, {input.size(1)});
    at::native::resize_output(save_invstd, {input.size(1)});
  }
  batch_norm_into(input, args, training, momentum, eps, out, save_mean, save_invstd);
  return {out, save_mean, save_invstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, at::Tensor& running_mean, at::Tensor& running_var,
    bool training, double momentum, double eps) {
  return batch_norm_forward(input, {value_or_undefined(weight), value_or_undefined(bias), running_mean, running_var},
                            training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit_no_stats(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, bool training, double momentum, double eps) {
  return batch_norm_forward(input, {value_or_undefined(weight), value_or_undefined(bias), {}, {}}, training,
                            momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_with_update(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, at::Tensor& running_mean, at::Tensor& running_var,
    double momentum, double eps) {
  auto [output, save_mean, save_invstd] = batch_norm_forward(
      input, {value_or_undefined(weight), value_or_undefined(bias), running_mean, running_var}, true,
      momentum, eps);
  at::Tensor reserve = at::empty({0}, input.options().dtype(at::kByte));
  return {output, save_mean, save_invstd, reserve};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_invstd,
    bool train, double eps, std::array<bool, 3> output_mask) {
  return batch_norm_backward_impl(grad_out, input, batch_norm_args(weight, {}, running_mean, running_var),
                                  value_or_undefined(save_mean), value_or_undefined(save_invstd), train,
                                  eps, output_mask);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var,
    bool update, double eps, std::array<bool, 3> output_mask, const at::Tensor& reserve) {
  return batch_norm_backward_impl(grad_out, input, batch_norm_args(weight, {}, running_mean, running_var),
                                  value_or_undefined(save_mean), value_or_undefined(save_var), update,
                                  eps, output_mask);
}

}  // namespace kiln::torch_integration::compiled
