#include "kiln/aten/compiled/nn/loss/loss_ops.h"

#include <ATen/core/Reduction.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/nll_loss_backward_meta.h>
#include <ATen/ops/nll_loss_forward_meta.h>

#include <limits>
#include <string>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/launch/index_checks.h"
#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/reduction.h"
#include "kiln/aten/compiled/launch/structured_outputs.h"
#include "kiln/aten/compiled/launch/structured_run.h"
#include "kiln/compiler/row_kernel_policy.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::DType;
using ir::OpCode;
using ir::ValueId;

constexpr int64_t kNoViolation = std::numeric_limits<int64_t>::min();

// Launch scalars of every loss kernel, in this order.
enum Scalar { kClasses, kIgnoreIndex, kClassStride, kWeightStride, kScalarCount };

int64_t class_dim_of(const at::Tensor& self) { return self.dim() == 1 ? 0 : 1; }

at::Tensor at_least_1d(const at::Tensor& tensor) {
  return tensor.dim() == 0 ? tensor.as_strided({1}, {1}) : tensor;
}

// `tensor` at every position of `sizes`, through stride 0 (a view of its
// first element: weight and total_weight, indexed or single).
at::Tensor broadcast_first(const at::Tensor& tensor, at::IntArrayRef sizes) {
  c10::DimVector strides(sizes.size(), 0);
  return tensor.as_strided(sizes, strides);
}

void check_floating(const at::Tensor& self, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", kernel,
                              "\" not implemented for '", c10::toString(self.scalar_type()), "'");
}

void check_same_type(const at::Tensor& self, const at::Tensor& other) {
  if (!other.defined()) return;
  TORCH_CHECK(other.scalar_type() == self.scalar_type(), "expected scalar type ",
              self.scalar_type(), " but found ", other.scalar_type());
}

c10::SmallVector<c10::Scalar, kScalarCount> loss_scalars(const at::Tensor& self,
                                                         const at::Tensor& weight,
                                                         int64_t ignore_index) {
  int64_t class_dim = class_dim_of(self);
  return {self.size(class_dim), ignore_index, self.stride(class_dim),
          weight.defined() ? weight.stride(0) : 0};
}

// What a kernel knows of the target at the current position. Kernel inputs:
// 0 the target, 1 the input at class 0, 2 the weight (when present), all of
// the target's shape.
struct Target {
  ValueId value;     // int64
  ValueId ignored;   // == ignore_index
  ValueId in_range;  // in [0, classes)
  ValueId counted;   // not ignored and in range
  ValueId input;     // input at the target's class (class 0 when out of range)
  ValueId weight;    // weight at the target's class, or 1
};

Target read_target(ir::Builder& builder, const std::vector<ValueId>& inputs,
                   const std::vector<ValueId>& scalars, bool has_weight) {
  Target target;
  target.value = builder.cast(inputs[0], DType::kInt64);
  target.ignored = builder.binary(OpCode::kEqual, target.value, scalars[kIgnoreIndex]);
  ValueId zero = builder.constant(0, DType::kInt64);
  target.in_range = builder.binary(
      OpCode::kLogicalAnd, builder.binary(OpCode::kGreaterEqual, target.value, zero),
      builder.binary(OpCode::kLess, target.value, scalars[kClasses]));
  target.counted = builder.binary(OpCode::kLogicalAnd, builder.unary(OpCode::kLogicalNot, target.ignored),
                                  target.in_range);
  ValueId safe = builder.select(target.in_range, target.value, zero);
  target.input = builder.indexed_load(1, builder.binary(OpCode::kMultiply, safe, scalars[kClassStride]));
  if (has_weight) {
    target.weight = builder.indexed_load(2, builder.binary(OpCode::kMultiply, safe, scalars[kWeightStride]));
  } else {
    target.weight = builder.constant(1, builder.dtype_of(target.input));
  }
  return target;
}

// -input[target] * weight[target], rounded to `storage` as the CPU's
// scalar_t arithmetic rounds it.
ValueId weighted_loss(ir::Builder& builder, const Target& target, DType storage) {
  ValueId product = builder.cast(builder.binary(OpCode::kMultiply, target.input, target.weight), storage);
  return builder.unary(OpCode::kNegate, product);
}

// The target's bound violation at one position, folded by maximum: the
// target when it is neither ignore_index nor a class (kNoViolation + 1 for a
// target of exactly kNoViolation), else kNoViolation.
ValueId bound_violation(ir::Builder& builder, ValueId target_value, ValueId classes, ValueId ignore_index,
                        ValueId none, ValueId none_plus_one) {
  ValueId value = builder.cast(target_value, DType::kInt64);
  ValueId bad = builder.binary(
      OpCode::kLogicalAnd, builder.binary(OpCode::kNotEqual, value, ignore_index),
      builder.binary(OpCode::kLogicalOr, builder.binary(OpCode::kLess, value, builder.constant(0, DType::kInt64)),
                     builder.binary(OpCode::kGreaterEqual, value, classes)));
  return builder.select(bad, builder.binary(OpCode::kMaximum, value, none_plus_one), none);
}

// Raises "Target 7 is out of bounds." (see loss_ops.h) when `worst`, the
// folded bound_violation, names a target.
void raise_for_violation(const char* op_name, const at::Tensor& worst) {
  check_device_value(op_name, worst, ErrorType::kIndexError,
                     [](int64_t value) -> std::optional<std::string> {
                       if (value == kNoViolation) return std::nullopt;
                       return "Target " + std::to_string(value) + " is out of bounds.";
                     });
}

// Raises "Target 7 is out of bounds." for a target that is neither
// ignore_index nor a class.
void check_targets(const char* op_name, const at::Tensor& target, int64_t classes,
                   int64_t ignore_index) {
  if (target.numel() == 0) return;
  at::Tensor input = at_least_1d(target);
  at::Tensor worst = at::empty({}, target.options().dtype(at::kLong));
  c10::DimVector dims;
  for (int64_t dim = 0; dim < input.dim(); ++dim) dims.push_back(dim);
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kMax;
  spec.element = [](ReductionContext& context) {
    const std::vector<ValueId>& scalars = context.scalars;
    return bound_violation(context.builder, context.inputs[0], scalars[0], scalars[1], scalars[2], scalars[3]);
  };
  c10::Scalar scalars[] = {classes, ignore_index, kNoViolation, kNoViolation + 1};
  launch_reduction(op_name, "nll_loss_target_bounds", {input}, {keepdim_view(worst, input.dim(), dims)},
                   dims, scalars, spec);
  raise_for_violation(op_name, worst);
}

// One loss term: -input[target] * weight[target], 0 where the target is
// ignored and NaN where it is out of range.
ValueId loss_term(ir::Builder& builder, const Target& picked, DType storage) {
  ValueId loss = weighted_loss(builder, picked, storage);
  ValueId zero = builder.constant(0, builder.dtype_of(loss));
  ValueId nan = builder.constant(std::numeric_limits<double>::quiet_NaN(), builder.dtype_of(loss));
  return builder.select(picked.ignored, zero, builder.select(picked.in_range, loss, nan));
}

// The mean or sum forward over few enough targets for one thread
// (row_kernel_policy.h), as one row kernel over all of them: the bound check,
// the total weight and the loss are its three stages, so the loss takes one
// launch where the kernels below take three. `inputs` as read_target's, at
// least 1-D; `output` and `total_weight` 0-dim.
void nll_reduced_as_one_row(const char* op_name, c10::ArrayRef<at::Tensor> inputs, bool has_weight, bool mean,
                            DType storage, c10::ArrayRef<c10::Scalar> loss_scalars, const at::Tensor& output,
                            const at::Tensor& total_weight) {
  const at::IntArrayRef sizes = inputs[0].sizes();
  c10::DimVector dims;
  for (int64_t dim = 0; dim < inputs[0].dim(); ++dim) dims.push_back(dim);
  at::Tensor worst = at::empty({}, inputs[0].options().dtype(at::kLong));
  auto whole = [&](const at::Tensor& scalar) { return broadcast_first(scalar, sizes); };
  c10::SmallVector<c10::Scalar, kScalarCount + 2> scalars(loss_scalars.begin(), loss_scalars.end());
  scalars.push_back(kNoViolation);
  scalars.push_back(kNoViolation + 1);
  const char* key = mean ? (has_weight ? "nll_loss_mean_weight_row" : "nll_loss_mean_row")
                         : (has_weight ? "nll_loss_sum_weight_row" : "nll_loss_sum_row");
  launch_row_reduction(
      op_name, key, inputs, {whole(worst), whole(total_weight), whole(output)}, dims, scalars,
      [has_weight, mean, storage](ir::Builder& builder, const std::vector<ValueId>& loads,
                                  const std::vector<ValueId>& scalar_values) -> std::vector<ValueId> {
        ValueId worst_value = builder.stage_result(builder.reduce_stage(
            ir::ReduceOp::kMax, bound_violation(builder, loads[0], scalar_values[kClasses], scalar_values[kIgnoreIndex],
                                                scalar_values[kScalarCount], scalar_values[kScalarCount + 1])));
        Target picked = read_target(builder, loads, scalar_values, has_weight);
        ValueId counted = builder.select(picked.counted, picked.weight,
                                         builder.constant(0, builder.dtype_of(picked.weight)));
        ValueId total = builder.stage_result(builder.reduce_stage(ir::ReduceOp::kSum, counted));
        ValueId term = loss_term(builder, picked, storage);
        // The total weight as the three-kernel path reads it back: rounded to
        // the input's dtype.
        if (mean) {
          ValueId read_back = builder.cast(builder.cast(total, storage), ir::compute_dtype(storage));
          term = builder.binary(OpCode::kDivide, term, read_back);
        }
        ValueId sum = builder.stage_result(builder.reduce_stage(ir::ReduceOp::kSum, term));
        return {worst_value, total, sum};
      },
      /*fixed_shape=*/false);
  raise_for_violation(op_name, worst);
}

// The forward of nll_loss and nll_loss2d into allocated outputs (output sized
// for the reduction, total_weight 0-dim).
void nll_forward_into(const char* op_name, const at::Tensor& self, const at::Tensor& target,
                      const at::Tensor& weight, int64_t reduction, int64_t ignore_index,
                      const at::Tensor& output, const at::Tensor& total_weight) {
  const int64_t class_dim = class_dim_of(self);
  const bool has_weight = weight.defined();
  const DType storage = require_ir_dtype(self.scalar_type(), op_name);
  const at::Tensor input_at_class = self.select(class_dim, 0);
  c10::SmallVector<at::Tensor, 3> inputs = {target, input_at_class};
  if (has_weight) inputs.push_back(broadcast_first(weight, target.sizes()));
  const auto scalars = loss_scalars(self, weight, ignore_index);

  if (reduction == at::Reduction::None && self.dim() >= 2) {
    check_targets(op_name, target, self.size(class_dim), ignore_index);
    total_weight.zero_();
    launch_elementwise(op_name, has_weight ? "nll_loss_none_weight" : "nll_loss_none", inputs,
                       {output}, scalars,
                       [has_weight, storage](ElementwiseContext& context) -> std::vector<ValueId> {
                         Target picked = read_target(context.builder, context.inputs, context.scalars, has_weight);
                         return {loss_term(context.builder, picked, storage)};
                       });
    return;
  }
  if (target.numel() == 0) {
    output.fill_(reduction == at::Reduction::Mean ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    total_weight.zero_();
    return;
  }
  for (at::Tensor& tensor : inputs) tensor = at_least_1d(tensor);
  if (compiler::suits_row_kernel(1, target.numel())) {
    nll_reduced_as_one_row(op_name, inputs, has_weight, reduction == at::Reduction::Mean, storage, scalars, output,
                           total_weight);
    return;
  }
  check_targets(op_name, target, self.size(class_dim), ignore_index);
  c10::DimVector dims;
  for (int64_t dim = 0; dim < inputs[0].dim(); ++dim) dims.push_back(dim);
  const int64_t rank = inputs[0].dim();

  ReductionSpec total;
  total.op = ir::ReduceOp::kSum;
  total.element = [has_weight](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    Target picked = read_target(builder, context.inputs, context.scalars, has_weight);
    return builder.select(picked.counted, picked.weight,
                          builder.constant(0, builder.dtype_of(picked.weight)));
  };
  launch_reduction(op_name, has_weight ? "nll_loss_total_weight" : "nll_loss_count", inputs,
                   {keepdim_view(total_weight, rank, dims)}, dims, scalars, total);

  const bool mean = reduction == at::Reduction::Mean;
  if (mean) inputs.push_back(broadcast_first(total_weight, inputs[0].sizes()));
  const int total_input = static_cast<int>(inputs.size()) - 1;
  ReductionSpec sum;
  sum.op = ir::ReduceOp::kSum;
  sum.element = [has_weight, storage, mean, total_input](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    Target picked = read_target(builder, context.inputs, context.scalars, has_weight);
    ValueId term = loss_term(builder, picked, storage);
    // Every term is divided, ignored ones too: a zero total weight makes the
    // mean NaN (0 / 0), as the CPU's sum / total_weight does.
    if (mean) term = builder.binary(OpCode::kDivide, term, context.inputs[total_input]);
    return term;
  };
  const char* key = mean ? (has_weight ? "nll_loss_mean_weight" : "nll_loss_mean")
                         : (has_weight ? "nll_loss_sum_weight" : "nll_loss_sum");
  launch_reduction(op_name, key, inputs, {keepdim_view(output, rank, dims)}, dims, scalars, sum);
}

// The backward of nll_loss and nll_loss2d into `grad_input` (self's shape).
void nll_backward_into(const char* op_name, const at::Tensor& grad_output, const at::Tensor& self,
                       const at::Tensor& target, const at::Tensor& weight, int64_t reduction,
                       int64_t ignore_index, const at::Tensor& total_weight,
                       const at::Tensor& grad_input, bool check_bounds) {
  if (self.numel() == 0) return;
  const int64_t class_dim = class_dim_of(self);
  if (check_bounds) check_targets(op_name, target, self.size(class_dim), ignore_index);
  const at::IntArrayRef sizes = self.sizes();
  const bool elementwise = reduction == at::Reduction::None && self.dim() >= 2;
  const bool mean = reduction == at::Reduction::Mean;
  const bool has_weight = weight.defined();
  const DType storage = require_ir_dtype(self.scalar_type(), op_name);

  auto along_class = [&](const at::Tensor& tensor) {
    // `tensor` has the target's shape: insert the class dim with stride 0.
    if (self.dim() == 1) return broadcast_first(tensor, sizes);
    return tensor.unsqueeze(class_dim).expand(sizes);
  };
  c10::SmallVector<at::Tensor, 5> inputs = {along_class(target)};
  inputs.push_back(elementwise ? along_class(grad_output) : broadcast_first(grad_output, sizes));
  if (!elementwise) inputs.push_back(broadcast_first(total_weight, sizes));
  if (has_weight) {
    c10::DimVector strides(sizes.size(), 0);
    strides[class_dim] = weight.stride(0);
    inputs.push_back(weight.as_strided(sizes, strides));
  }
  const int weight_input = static_cast<int>(inputs.size()) - 1;
  c10::Scalar scalars[] = {ignore_index};
  const int64_t coordinate_dims[] = {class_dim};
  ElementwiseOptions options;
  options.coordinate_dims = coordinate_dims;
  const char* key = elementwise ? (has_weight ? "nll_loss_backward_none_weight" : "nll_loss_backward_none")
                    : mean      ? (has_weight ? "nll_loss_backward_mean_weight" : "nll_loss_backward_mean")
                                : (has_weight ? "nll_loss_backward_sum_weight" : "nll_loss_backward_sum");
  launch_elementwise(
      op_name, key, inputs, {grad_input}, scalars,
      [=](ElementwiseContext& context) -> std::vector<ValueId> {
        ir::Builder& builder = context.builder;
        ValueId value = builder.cast(context.inputs[0], DType::kInt64);
        ValueId hit = builder.binary(
            OpCode::kLogicalAnd, builder.binary(OpCode::kEqual, context.coordinate(class_dim), value),
            builder.binary(OpCode::kNotEqual, value, context.scalars[0]));
        ValueId grad = context.inputs[1];
        ValueId result;
        if (elementwise) {
          // -weight[target] * grad_output[position]
          ValueId negated = has_weight ? builder.unary(OpCode::kNegate, context.inputs[weight_input])
                                       : builder.constant(-1, builder.dtype_of(grad));
          result = builder.binary(OpCode::kMultiply, negated, grad);
        } else {
          // weight[target] * -(grad_output / total_weight), the quotient
          // rounded as the CPU's scalar_t arithmetic rounds it.
          ValueId scaled = mean ? builder.cast(builder.binary(OpCode::kDivide, grad, context.inputs[2]), storage)
                                : grad;
          result = builder.unary(OpCode::kNegate, scaled);
          if (has_weight) result = builder.binary(OpCode::kMultiply, context.inputs[weight_input], result);
        }
        return {builder.select(hit, result, builder.constant(0, builder.dtype_of(result)))};
      },
      options);
}

void check_nll_loss2d_inputs(const at::Tensor& input, const at::Tensor& target, const at::Tensor& weight) {
  TORCH_CHECK(target.scalar_type() == at::kLong || target.scalar_type() == at::kByte,
              "expected target dtype to be Long or Byte, but got ", target.scalar_type());
  TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors)"
              " but got targets of dimension: ", target.dim());
  TORCH_CHECK(input.dim() == 4, "only batches of spatial inputs supported (4D tensors), "
              "but got input of dimension: ", input.dim());
  TORCH_CHECK(!weight.defined() || weight.numel() == input.size(1),
              "weight tensor should be defined either for all or no classes");
  TORCH_CHECK(input.size(0) == target.size(0) && input.size(2) == target.size(1) &&
                  input.size(3) == target.size(2),
              "size mismatch (got input: ", input.sizes(), " , target: ", target.sizes());
  // The CPU's kernel reads the target as int64.
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
}

const at::Tensor& defined_or_empty(const std::optional<at::Tensor>& tensor) {
  static const at::Tensor undefined;
  return tensor.has_value() ? *tensor : undefined;
}

at::OptionalTensorRef optional_ref(const at::Tensor& tensor) {
  return tensor.defined() ? at::OptionalTensorRef(tensor) : at::OptionalTensorRef();
}

void nll_forward_checks(const char* kernel, const at::Tensor& self, const at::Tensor& target,
                        const at::Tensor& weight) {
  check_same_device({self, target, weight});
  check_floating(self, kernel);
  check_same_type(self, weight);
}

void nll_backward_checks(const char* kernel, const at::Tensor& grad_output, const at::Tensor& self,
                         const at::Tensor& target, const at::Tensor& weight,
                         const at::Tensor& total_weight) {
  check_same_device({grad_output, self, target, weight, total_weight});
  check_floating(self, kernel);
  check_same_type(self, grad_output);
  check_same_type(self, weight);
  check_same_type(self, total_weight);
}

}  // namespace

std::tuple<at::Tensor&, at::Tensor&> nll_loss_forward_out(
    const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight_opt,
    int64_t reduction, int64_t ignore_index, at::Tensor& output, at::Tensor& total_weight) {
  const at::Tensor& weight = defined_or_empty(weight_opt);
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_nll_loss_forward, 2> meta({output, total_weight});
  meta.meta(self, target, optional_ref(weight), reduction, ignore_index);
  nll_forward_checks("nll_loss_out_frame", self, target, weight);
  nll_forward_into("aten::nll_loss_forward.output", self, target, weight, reduction, ignore_index,
                   output, total_weight);
  return {output, total_weight};
}

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight_opt,
                                                    int64_t reduction, int64_t ignore_index) {
  const at::Tensor& weight = defined_or_empty(weight_opt);
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_nll_loss_forward, 2> meta;
  meta.meta(self, target, optional_ref(weight), reduction, ignore_index);
  nll_forward_checks("nll_loss_out_frame", self, target, weight);
  nll_forward_into("aten::nll_loss_forward", self, target, weight, reduction, ignore_index,
                   meta.output(0), meta.output(1));
  return {meta.output(0), meta.output(1)};
}

at::Tensor& nll_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const at::Tensor& target, const std::optional<at::Tensor>& weight_opt,
                                  int64_t reduction, int64_t ignore_index,
                                  const at::Tensor& total_weight, at::Tensor& grad_input) {
  const at::Tensor& weight = defined_or_empty(weight_opt);
  structured<at::meta::structured_nll_loss_backward>(&grad_input, [&](const at::Tensor& result) {
    nll_backward_checks("nll_loss_backward_out_frame", grad_output, self, target, weight, total_weight);
    // The CPU checks targets except for reduction=none over a batch.
    bool check = !(reduction == at::Reduction::None && self.dim() == 2);
    nll_backward_into("aten::nll_loss_backward.grad_input", grad_output, self, target, weight,
                      reduction, ignore_index, total_weight, result, check);
  }, grad_output, self, target, optional_ref(weight), reduction, ignore_index, total_weight);
  return grad_input;
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& target, const std::optional<at::Tensor>& weight_opt,
                             int64_t reduction, int64_t ignore_index, const at::Tensor& total_weight) {
  const at::Tensor& weight = defined_or_empty(weight_opt);
  return structured<at::meta::structured_nll_loss_backward>(nullptr, [&](const at::Tensor& result) {
    nll_backward_checks("nll_loss_backward_out_frame", grad_output, self, target, weight, total_weight);
    bool check = !(reduction == at::Reduction::None && self.dim() == 2);
    nll_backward_into("aten::nll_loss_backward", grad_output, self, target, weight, reduction,
                      ignore_index, total_weight, result, check);
  }, grad_output, self, target, optional_ref(weight), reduction, ignore_index, total_weight);
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss2d_forward_out(
    const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight_opt,
    int64_t reduction, int64_t ignore_index, at::Tensor& output, at::Tensor& total_weight) {
  const at::Tensor& weight = defined_or_empty(weight_opt);
  check_nll_loss2d_inputs(self, target, weight);
  nll_forward_checks("nll_loss2d_forward_out_frame", self, target, weight);
  at::native::resize_output(total_weight, {});
  if (reduction == at::Reduction::None) {
    at::native::resize_output(output, {self.size(0), self.size(2), self.size(3)});
  } else {
    at::native::resize_output(output, {});
  }
  nll_forward_into("aten::nll_loss2d_forward.output", self, target, weight, reduction, ignore_index,
                   output, total_weight);
  return {output, total_weight};
}

std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight,
                                                      int64_t reduction, int64_t ignore_index) {
  at::Tensor output = at::empty({0}, self.options());
  at::Tensor total_weight = at::empty({0}, self.options());
  nll_loss2d_forward_out(self, target, weight, reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

at::Tensor& nll_loss2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    const at::Tensor& target, const std::optional<at::Tensor>& weight_opt,
                                    int64_t reduction, int64_t ignore_index,
                                    const at::Tensor& total_weight, at::Tensor& grad_input) {
  const at::Tensor& weight = defined_or_empty(weight_opt);
  check_nll_loss2d_inputs(self, target, weight);
  nll_backward_checks("nll_loss2d_backward_out_frame", grad_output, self, target, weight, total_weight);
  at::native::resize_output(grad_input, self.sizes());
  TORCH_CHECK(grad_input.is_contiguous(), "grad_input must be contiguous");
  TORCH_CHECK(total_weight.numel() == 1, "expected total_weight to be a single element tensor, got: ",
              total_weight.sizes(), " (", total_weight.numel(), " elements)");
  if (reduction == at::Reduction::None) {
    TORCH_CHECK(grad_output.dim() == 3, "grad_output must have same dimension as target (3) but got "
                "dimension: ", grad_output.sizes());
    TORCH_CHECK(grad_output.sizes().equals(target.sizes()), "size mismatch (got grad_output: ",
                grad_output.sizes(), " target: ", target.sizes());
  } else {
    TORCH_CHECK(grad_output.dim() <= 1 && grad_output.numel() == 1,
                "Expected a single element grad_output tensor, but got: ", grad_output.sizes());
  }
  nll_backward_into("aten::nll_loss2d_backward.grad_input", grad_output, self, target, weight,
                    reduction, ignore_index, total_weight, grad_input,
                    reduction != at::Reduction::None);
  return grad_input;
}

at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               const at::Tensor& target, const std::optional<at::Tensor>& weight,
                               int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight) {
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  return nll_loss2d_backward_out(grad_output, self, target, weight, reduction, ignore_index,
                                 total_weight, grad_input);
}

}  // namespace kiln::torch_integration::compiled
