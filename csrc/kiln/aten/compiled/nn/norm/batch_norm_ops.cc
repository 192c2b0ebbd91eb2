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

// An input seen per channel (dim 1): the dims a statistic reduces, per-channel
// vectors viewed along the channel dim, and the dtypes statistics live in.
struct ChannelSpace {
  int64_t rank;
  at::IntArrayRef sizes;
  c10::DimVector reduced;
  at::ScalarType accumulate;
  DType compute;
  int64_t count;  // elements per channel
  // `vector` broadcast to the input's shape, or kept as one value per channel.
  at::Tensor full(const at::Tensor& vector) const { return channel_view(vector, rank, 1).expand(sizes); }
  at::Tensor keep(const at::Tensor& vector) const { return channel_view(vector, rank, 1); }
};

ChannelSpace channel_space(const at::Tensor& input) {
  const at::ScalarType accumulate = accumulate_type(input.scalar_type());
  return {input.dim(), input.sizes(), all_but(input.dim(), 1), accumulate, compute_of(accumulate),
          input.numel() / input.size(1)};
}

// The optional weight and bias of the forward's normalization.
struct BatchNormAffine {
  bool has_weight, has_bias;
  // Names the flags in a kernel key.
  std::string key() const { return std::string(has_weight ? "_w" : "") + (has_bias ? "_b" : ""); }
  // Appends the weight and bias, broadcast, to a kernel's inputs.
  void add_inputs(const ChannelSpace& space, const BatchNormArgs& args, std::vector<at::Tensor>& inputs) const {
    if (has_weight) inputs.push_back(space.full(args.weight));
    if (has_bias) inputs.push_back(space.full(args.bias));
  }
  // x * alpha + beta with alpha = invstd * w and beta = b - mean * alpha, as
  // ATen's contiguous CPU kernel; `values` from index 3 are w and b.
  ValueId normalize(ir::Builder& builder, DType compute, ValueId x, ValueId mean, ValueId invstd,
                    const std::vector<ValueId>& values) const {
    int next = 3;
    ValueId alpha = invstd;
    if (has_weight) alpha = builder.binary(OpCode::kMultiply, alpha, builder.cast(values[next++], compute));
    ValueId beta = builder.unary(OpCode::kNegate, builder.binary(OpCode::kMultiply, mean, alpha));
    if (has_bias) beta = builder.binary(OpCode::kAdd, builder.cast(values[next++], compute), beta);
    return builder.binary(OpCode::kAdd, builder.binary(OpCode::kMultiply, x, alpha), beta);
  }
};

// Evaluation: normalize with the running statistics.
void batch_norm_eval(const char* op_name, const at::Tensor& input, const BatchNormArgs& args, double eps,
                     const BatchNormAffine& affine, const at::Tensor& output) {
  TORCH_CHECK(args.running_mean.defined(), "running_mean must be defined in evaluation mode");
  TORCH_CHECK(args.running_var.defined(), "running_var must be defined in evaluation mode");
  if (input.numel() == 0) return;
  const ChannelSpace space = channel_space(input);
  const DType compute = space.compute;
  std::vector<at::Tensor> inputs = {input, space.full(args.running_mean), space.full(args.running_var)};
  affine.add_inputs(space, args, inputs);
  launch_elementwise(op_name, "batch_norm_eval" + affine.key(), inputs, {output}, {eps},
                     [compute, affine](ElementwiseContext& context) -> std::vector<ValueId> {
                       ir::Builder& builder = context.builder;
                       ValueId eps_value = builder.cast(context.scalars[0], compute);
                       ValueId invstd = builder.unary(
                           OpCode::kRsqrt,
                           builder.binary(OpCode::kAdd, builder.cast(context.inputs[2], compute), eps_value));
                       return {affine.normalize(builder, compute, builder.cast(context.inputs[0], compute),
                                                builder.cast(context.inputs[1], compute), invstd, context.inputs)};
                     });
}

// Training, step 1: the per-channel mean into `mean` (and its rounded copy
// `save_mean` when that is another tensor).
void batch_mean(const char* op_name, const at::Tensor& input, const ChannelSpace& space, const at::Tensor& mean,
                const at::Tensor& save_mean) {
  const DType compute = space.compute;
  std::vector<at::Tensor> mean_outputs = {space.keep(mean)};
  if (!mean.is_same(save_mean)) mean_outputs.push_back(space.keep(save_mean));
  const c10::Scalar n(static_cast<double>(space.count));
  launch_sum(op_name, "batch_norm_mean", {input}, mean_outputs, space.reduced, {n},
             [compute](ReductionContext& context) { return context.builder.cast(context.inputs[0], compute); },
             [compute, outputs = mean_outputs.size()](ReductionContext& context, ValueId sum) {
               ValueId value = context.builder.binary(OpCode::kDivide, sum, scalar_as(context, 0, compute));
               return std::vector<ValueId>(outputs, value);
             });
}

// Training, step 2: the sum of squared deviations from `mean`, as invstd
// (and its rounded copy `save_invstd`) for the output and, when `var_sum` is
// defined, the sum itself for running_var.
void batch_invstd(const char* op_name, const at::Tensor& input, const ChannelSpace& space, double eps,
                  const at::Tensor& mean, const at::Tensor& invstd, const at::Tensor& save_invstd,
                  const at::Tensor& var_sum) {
  const DType compute = space.compute;
  const bool update_var = var_sum.defined();
  std::vector<at::Tensor> var_outputs = {space.keep(invstd)};
  const bool rounded_copy = !invstd.is_same(save_invstd);
  if (rounded_copy) var_outputs.push_back(space.keep(save_invstd));
  if (update_var) var_outputs.push_back(space.keep(var_sum));
  const c10::Scalar var_scalars[] = {static_cast<double>(space.count), eps};
  std::string var_key = std::string("batch_norm_invstd") + (rounded_copy ? "_r" : "") + (update_var ? "_v" : "");
  launch_sum(op_name, var_key, {input, space.full(mean)}, var_outputs, space.reduced, var_scalars,
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
}

// Training, step 3: running = momentum * statistic + (1 - momentum) *
// running, for each running statistic given, the variance unbiased
// (var_sum / (n - 1)).
void update_running_stats(const char* op_name, const BatchNormArgs& args, const ChannelSpace& space,
                          double momentum, const at::Tensor& mean, const at::Tensor& var_sum) {
  const bool update_mean = args.running_mean.defined();
  const bool update_var = args.running_var.defined();
  if (!update_mean && !update_var) return;
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
  const c10::Scalar scalars[] = {momentum, static_cast<double>(space.count - 1)};
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

// Training, step 4: normalize with the batch's statistics.
void batch_normalize(const char* op_name, const at::Tensor& input, const BatchNormArgs& args,
                     const ChannelSpace& space, const BatchNormAffine& affine, const at::Tensor& mean,
                     const at::Tensor& invstd, const at::Tensor& output) {
  const DType compute = space.compute;
  std::vector<at::Tensor> inputs = {input, space.full(mean), space.full(invstd)};
  affine.add_inputs(space, args, inputs);
  launch_elementwise(op_name, "batch_norm_train" + affine.key(), inputs, {output}, {},
                     [compute, affine](ElementwiseContext& context) -> std::vector<ValueId> {
                       ir::Builder& builder = context.builder;
                       return {affine.normalize(builder, compute, builder.cast(context.inputs[0], compute),
                                                context.inputs[1], context.inputs[2], context.inputs)};
                     });
}

void batch_norm_into(const at::Tensor& input, const BatchNormArgs& args, bool training,
                     double momentum, double eps, const at::Tensor& output,
                     const at::Tensor& save_mean, const at::Tensor& save_invstd) {
  const char* op_name = "aten::native_batch_norm";
  const BatchNormAffine affine{args.weight.defined(), args.bias.defined()};
  if (!training) {
    batch_norm_eval(op_name, input, args, eps, affine, output);
    return;
  }
  TORCH_CHECK(input.numel() != 0, "input tensor must have at least one element, but got input_sizes = ",
              input.sizes());
  const ChannelSpace space = channel_space(input);
  at::Tensor mean = accumulate_buffer(save_mean, space.accumulate);
  at::Tensor invstd = accumulate_buffer(save_invstd, space.accumulate);
  batch_mean(op_name, input, space, mean, save_mean);
  at::Tensor var_sum = args.running_var.defined()
                           ? at::empty({input.size(1)}, input.options().dtype(space.accumulate))
                           : at::Tensor();
  batch_invstd(op_name, input, space, eps, mean, invstd, save_invstd, var_sum);
  update_running_stats(op_name, args, space, momentum, mean, var_sum);
  batch_normalize(op_name, input, args, space, affine, mean, invstd, output);
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

// The backward's checks, as ATen's; returns the dtype of the parameter
// gradients.
at::ScalarType check_backward_inputs(const at::Tensor& grad_out, const at::Tensor& input,
                                     const BatchNormArgs& args, const at::Tensor& save_mean,
                                     const at::Tensor& save_invstd) {
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
  return at::native::param_scalar_type(input, mixed);
}

// The statistics a backward normalizes with, as kernel inputs 2 and 3:
// training, the saved mean and invstd; evaluation, the running mean and
// variance, invstd computed from the variance.
struct BackwardStatistics {
  bool train;
  DType compute;
  at::Tensor mean_full, stat_full;  // broadcast to the input's shape
  ValueId invstd(ir::Builder& builder, ValueId stat, ValueId eps) const {
    if (train) return builder.cast(stat, compute);
    return builder.unary(OpCode::kRsqrt, builder.binary(OpCode::kAdd, builder.cast(stat, compute), eps));
  }
};

// A per-channel accumulator: `result` itself when it is of the accumulate
// dtype, else a buffer of it (then `result` receives a rounded copy).
at::Tensor channel_accumulator(const at::Tensor& input, const ChannelSpace& space, const at::Tensor& result) {
  return accumulate_buffer(
      result.defined() ? result : at::empty({input.size(1)}, input.options().dtype(space.accumulate)),
      space.accumulate);
}

// sum(dy) per channel: grad_bias itself.
at::Tensor gradient_sum(const char* op_name, const at::Tensor& grad_out, const at::Tensor& input,
                        const ChannelSpace& space, const at::Tensor& grad_bias) {
  const DType compute = space.compute;
  at::Tensor sum = channel_accumulator(input, space, grad_bias);
  std::vector<at::Tensor> outputs = {space.keep(sum)};
  if (grad_bias.defined() && !grad_bias.is_same(sum)) outputs.push_back(space.keep(grad_bias));
  launch_sum(op_name, "batch_norm_backward_sum", {grad_out}, outputs, space.reduced, {},
             [compute](ReductionContext& context) { return context.builder.cast(context.inputs[0], compute); },
             nullptr);
  return sum;
}

// sum((x - mean) * dy * invstd) per channel: grad_weight itself.
at::Tensor gradient_dot(const char* op_name, const at::Tensor& grad_out, const at::Tensor& input,
                        const ChannelSpace& space, const BackwardStatistics& statistics, double eps,
                        const at::Tensor& grad_weight) {
  const DType compute = space.compute;
  at::Tensor dot = channel_accumulator(input, space, grad_weight);
  std::vector<at::Tensor> outputs = {space.keep(dot)};
  if (grad_weight.defined() && !grad_weight.is_same(dot)) outputs.push_back(space.keep(grad_weight));
  const c10::Scalar eps_scalar(eps);
  launch_sum(op_name, statistics.train ? "batch_norm_backward_dot" : "batch_norm_backward_dot_eval",
             {input, grad_out, statistics.mean_full, statistics.stat_full}, outputs, space.reduced, {eps_scalar},
             [compute, statistics](ReductionContext& context) {
               ir::Builder& builder = context.builder;
               auto value = [&](int index) { return builder.cast(context.inputs[index], compute); };
               ValueId centered = builder.binary(OpCode::kSubtract, value(0), value(2));
               ValueId invstd = statistics.invstd(builder, context.inputs[3], scalar_as(context, 0, compute));
               return builder.binary(OpCode::kMultiply, builder.binary(OpCode::kMultiply, centered, value(1)),
                                     invstd);
             },
             nullptr);
  return dot;
}

// grad_input: evaluation, dy * invstd * w; training,
// (dy - sum / n - (x - mean) * k) * invstd * w with k = dot * invstd / n
// (dot already carries one invstd).
void gradient_input(const char* op_name, const at::Tensor& grad_out, const at::Tensor& input,
                    const BatchNormArgs& args, const ChannelSpace& space, const BackwardStatistics& statistics,
                    double eps, const at::Tensor& sum, const at::Tensor& dot, const at::Tensor& grad_input) {
  const bool train = statistics.train, has_weight = args.weight.defined();
  const DType compute = space.compute;
  std::vector<at::Tensor> inputs = {input, grad_out, statistics.mean_full, statistics.stat_full};
  if (train) {
    inputs.push_back(space.full(sum));
    inputs.push_back(space.full(dot));
  }
  if (has_weight) inputs.push_back(space.full(args.weight));
  const c10::Scalar scalars[] = {eps, static_cast<double>(space.count)};
  std::string key = std::string(train ? "batch_norm_backward_input" : "batch_norm_backward_input_eval") +
                    (has_weight ? "_w" : "");
  launch_elementwise(
      op_name, key, inputs, {grad_input}, scalars,
      [train, has_weight, compute, statistics](ElementwiseContext& context) -> std::vector<ValueId> {
        ir::Builder& builder = context.builder;
        auto value = [&](int index) { return builder.cast(context.inputs[index], compute); };
        ValueId eps_value = builder.cast(context.scalars[0], compute);
        ValueId invstd = statistics.invstd(builder, context.inputs[3], eps_value);
        ValueId dy = value(1);
        ValueId scale = invstd;
        if (has_weight) scale = builder.binary(OpCode::kMultiply, scale, value(train ? 6 : 4));
        if (!train) return {builder.binary(OpCode::kMultiply, dy, scale)};
        ValueId n = builder.cast(context.scalars[1], compute);
        ValueId grad_mean = builder.binary(OpCode::kDivide, value(4), n);
        ValueId k = builder.binary(OpCode::kDivide, builder.binary(OpCode::kMultiply, value(5), invstd), n);
        ValueId projection = builder.binary(OpCode::kMultiply, builder.binary(OpCode::kSubtract, value(0), value(2)), k);
        ValueId centered = builder.binary(OpCode::kSubtract, builder.binary(OpCode::kSubtract, dy, grad_mean), projection);
        return {builder.binary(OpCode::kMultiply, centered, scale)};
      });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_impl(
    const at::Tensor& grad_out, const at::Tensor& input, const BatchNormArgs& args,
    const at::Tensor& save_mean, const at::Tensor& save_invstd, bool train, double eps,
    std::array<bool, 3> mask) {
  const char* op_name = "aten::native_batch_norm_backward";
  const at::ScalarType param = check_backward_inputs(grad_out, input, args, save_mean, save_invstd);
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
  const ChannelSpace space = channel_space(input);
  const BackwardStatistics statistics{train, space.compute, space.full(train ? save_mean : args.running_mean),
                                      space.full(train ? save_invstd : args.running_var)};
  // grad_input in training needs both sums; they are also grad_bias and
  // grad_weight.
  at::Tensor sum, dot;
  if (mask[2] || (mask[0] && train)) sum = gradient_sum(op_name, grad_out, input, space, grad_bias);
  if (mask[1] || (mask[0] && train)) {
    dot = gradient_dot(op_name, grad_out, input, space, statistics, eps, grad_weight);
  }
  if (mask[0]) gradient_input(op_name, grad_out, input, args, space, statistics, eps, sum, dot, grad_input);
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
