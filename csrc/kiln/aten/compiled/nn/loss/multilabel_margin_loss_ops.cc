#include "kiln/aten/compiled/nn/loss/multilabel_margin_loss_ops.h"

#include <ATen/core/Reduction.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>

#include <cmath>
#include <optional>
#include <string>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/launch/index_checks.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/reduction.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::DType;
using ir::OpCode;
using ir::ValueId;


struct Shape {
  int64_t samples;
  int64_t classes;
};

Shape check_shapes(const at::Tensor& input, const at::Tensor& target) {
  const int64_t dims = input.dim();
  TORCH_CHECK((dims == 2 && input.size(1) != 0) || (dims == 1 && input.size(0) != 0) || dims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              input.sizes());
  if (dims <= 1) {
    Shape shape{1, dims == 0 ? 1 : input.size(0)};
    TORCH_CHECK(target.dim() <= 1 && target.numel() == shape.classes, "inconsistent target size: ",
                target.sizes(), " for input of size: ", input.sizes());
    return shape;
  }
  Shape shape{input.size(0), input.size(1)};
  TORCH_CHECK(target.dim() == 2 && target.size(0) == shape.samples && target.size(1) == shape.classes,
              "inconsistent target size: ", target.sizes(), " for input of size: ", input.sizes());
  return shape;
}

void check_dtypes(const char* kernel, const at::Tensor& input, const at::Tensor& target) {
  check_dispatch_dtype(kernel, input.scalar_type(), kFloatAndDoubleTypes);
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
}

// Raises "argument #<position> 'target' is out of range" for an entry
// outside [-1, classes).
void check_targets(const char* op_name, const at::Tensor& targets, int64_t classes, int position) {
  const int64_t dims[] = {0, 1};
  at::Tensor worst = at::empty({}, targets.options());
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kMax;
  spec.element = [](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ValueId value = context.inputs[0];
    ValueId outside = builder.binary(
        OpCode::kLogicalOr, builder.binary(OpCode::kLess, value, builder.constant(-1, DType::kInt64)),
        builder.binary(OpCode::kGreaterEqual, value, context.scalars[0]));
    return builder.select(outside, builder.constant(1, DType::kInt64), builder.constant(0, DType::kInt64));
  };
  const c10::Scalar scalars[] = {classes};
  launch_reduction(op_name, "multilabel_margin_target_bounds", {targets},
                   {keepdim_view(worst, 2, dims)}, dims, scalars, spec);
  const std::string message = "argument #" + std::to_string(position) + " 'target' is out of range";
  check_device_value(op_name, worst, ErrorType::kRuntimeError,
                     [message](int64_t value) -> std::optional<std::string> {
                       if (value == 0) return std::nullopt;
                       return message;
                     });
}

// Each sample's target count: the position of its first negative entry.
at::Tensor target_counts(const char* op_name, const at::Tensor& targets) {
  const int64_t samples = targets.size(0), classes = targets.size(1);
  at::Tensor counts = at::empty({samples}, targets.options());
  at::Tensor positions = at::arange(classes, targets.options()).unsqueeze(0).expand({samples, classes});
  const int64_t dims[] = {1};
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kMin;
  spec.element = [](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ValueId negative = builder.binary(OpCode::kLess, context.inputs[0], builder.constant(0, DType::kInt64));
    return builder.select(negative, context.inputs[1], context.scalars[0]);
  };
  const c10::Scalar scalars[] = {classes};
  launch_reduction(op_name, "multilabel_margin_target_counts", {targets, positions},
                   {keepdim_view(counts, 2, dims)}, dims, scalars, spec);
  return counts;
}

// Inputs of a kernel over (sample, target slot j, class d) triples, laid out
// [samples, j, d] or, with `classes_first`, [samples, d, j].
enum PairInput { kInputAtClassZero, kTargetAtSlot, kCount, kSlot, kInputAtClass, kIsTarget, kClassIndex, kPairInputs };

c10::SmallVector<at::Tensor, kPairInputs> pair_inputs(const at::Tensor& input, const at::Tensor& targets,
                                                      const at::Tensor& counts, const at::Tensor& is_target,
                                                      bool classes_first) {
  const int64_t samples = input.size(0), classes = input.size(1);
  const std::vector<int64_t> sizes = {samples, classes, classes};
  const int64_t slot_dim = classes_first ? 2 : 1, class_dim = classes_first ? 1 : 2;
  auto along = [&](const at::Tensor& tensor, int64_t dim) {
    // `tensor` is [samples, classes]: its classes run along `dim`.
    return tensor.unsqueeze(dim == 1 ? 2 : 1).expand(sizes);
  };
  at::Tensor indices = at::arange(classes, targets.options());
  c10::SmallVector<at::Tensor, kPairInputs> inputs;
  inputs.push_back(input.select(1, 0).view({samples, 1, 1}).expand(sizes));
  inputs.push_back(along(targets, slot_dim));
  inputs.push_back(counts.view({samples, 1, 1}).expand(sizes));
  inputs.push_back(along(indices.unsqueeze(0).expand({samples, classes}), slot_dim));
  inputs.push_back(along(input, class_dim));
  inputs.push_back(is_target.defined() ? along(is_target, class_dim) : at::Tensor());
  inputs.push_back(along(indices.unsqueeze(0).expand({samples, classes}), class_dim));
  return inputs;
}

// The slot is a target (before the first negative entry).
ValueId slot_used(ir::Builder& builder, const std::vector<ValueId>& inputs) {
  return builder.binary(OpCode::kLess, inputs[kSlot], inputs[kCount]);
}

// The pair (target slot j, class d) has a positive hinge 1 - x[t_j] + x[d]
// with d a non-target; `hinge` receives that value. Scalars: 0 the input's
// class stride.
ValueId pair_active(ir::Builder& builder, const std::vector<ValueId>& inputs,
                    const std::vector<ValueId>& scalars, ValueId* hinge) {
  const DType type = builder.dtype_of(inputs[kInputAtClass]);
  ValueId zero_index = builder.constant(0, DType::kInt64);
  ValueId target = inputs[kTargetAtSlot];
  ValueId safe = builder.select(builder.binary(OpCode::kGreaterEqual, target, zero_index), target, zero_index);
  ValueId at_target = builder.indexed_load(kInputAtClassZero, builder.binary(OpCode::kMultiply, safe, scalars[0]));
  ValueId z = builder.binary(OpCode::kAdd, builder.binary(OpCode::kSubtract, builder.constant(1, type), at_target),
                             inputs[kInputAtClass]);
  if (hinge != nullptr) *hinge = z;
  ValueId non_target = builder.binary(OpCode::kEqual, inputs[kIsTarget], builder.constant(0, builder.dtype_of(inputs[kIsTarget])));
  ValueId active = builder.binary(OpCode::kLogicalAnd, slot_used(builder, inputs), non_target);
  return builder.binary(OpCode::kLogicalAnd, active, builder.binary(OpCode::kGreater, z, builder.constant(0, type)));
}

c10::SmallVector<at::Tensor, kPairInputs> without_undefined(c10::SmallVector<at::Tensor, kPairInputs> inputs) {
  c10::SmallVector<at::Tensor, kPairInputs> result;
  for (at::Tensor& tensor : inputs) result.push_back(tensor.defined() ? tensor : inputs[kCount]);
  return result;
}

void forward_into(const char* op_name, const at::Tensor& self, const at::Tensor& target,
                  int64_t reduction, at::Tensor& output, at::Tensor& is_target) {
  check_same_device({self, target, output, is_target});
  const Shape shape = check_shapes(self, target);
  if (reduction != at::Reduction::None || target.dim() <= 1) {
    output.resize_({});
  } else {
    output.resize_({shape.samples});
  }
  is_target.resize_as_(target);
  TORCH_CHECK(is_target.is_contiguous(), "is_target must be contiguous");
  is_target.zero_();
  if (self.numel() == 0) {
    // The CPU leaves the output unwritten here; a mean of nothing is NaN.
    if (output.dim() == 0) output.fill_(reduction == at::Reduction::Mean ? NAN : 0.0);
    return;
  }
  check_dtypes("multilabel_margin_loss_forward_out_frame", self, target);
  check_targets(op_name, target.reshape({shape.samples, shape.classes}), shape.classes, 2);
  const std::vector<int64_t> sizes = {shape.samples, shape.classes};
  at::Tensor input = self.reshape(sizes);
  at::Tensor targets = target.reshape(sizes);
  at::Tensor counts = target_counts(op_name, targets);
  at::Tensor marks = is_target.view(sizes);
  const c10::Scalar scalars[] = {input.stride(1)};

  // is_target[n, d]: some used slot holds d.
  {
    auto inputs = without_undefined(pair_inputs(input, targets, counts, at::Tensor(), /*classes_first=*/true));
    const int64_t dims[] = {2};
    ReductionSpec spec;
    spec.op = ir::ReduceOp::kMax;
    spec.element = [](ReductionContext& context) {
      ir::Builder& builder = context.builder;
      ValueId hit = builder.binary(OpCode::kLogicalAnd, slot_used(builder, context.inputs),
                                   builder.binary(OpCode::kEqual, context.inputs[kTargetAtSlot], context.inputs[kClassIndex]));
      return builder.select(hit, builder.constant(1, DType::kInt64), builder.constant(0, DType::kInt64));
    };
    launch_reduction(op_name, "multilabel_margin_is_target", inputs, {keepdim_view(marks, 3, dims)},
                     dims, scalars, spec);
  }
  // Each sample's hinge sum, in double, rounded to the dtype as the CPU's
  // inner sum returns it.
  at::Tensor sums = at::empty({shape.samples}, self.options());
  {
    auto inputs = pair_inputs(input, targets, counts, marks, /*classes_first=*/false);
    const int64_t dims[] = {1, 2};
    ReductionSpec spec;
    spec.op = ir::ReduceOp::kSum;
    spec.element = [](ReductionContext& context) {
      ir::Builder& builder = context.builder;
      ValueId hinge;
      ValueId active = pair_active(builder, context.inputs, context.scalars, &hinge);
      return builder.select(active, builder.cast(hinge, DType::kFloat64), builder.constant(0, DType::kFloat64));
    };
    launch_reduction(op_name, "multilabel_margin_sums", inputs, {keepdim_view(sums, 3, dims)}, dims,
                     scalars, spec);
  }
  if (output.dim() > 0) {
    output.copy_(at::div(sums, shape.classes));
    return;
  }
  at::Tensor total = at::div(at::sum(sums, {0}, false, at::kDouble), shape.classes);
  if (reduction == at::Reduction::Mean) total = at::div(total, shape.samples);
  output.copy_(total);
}

void backward_into(const char* op_name, const at::Tensor& grad_output, const at::Tensor& self,
                   const at::Tensor& target, int64_t reduction, const at::Tensor& is_target,
                   at::Tensor& grad_input) {
  check_same_device({grad_output, self, target, is_target, grad_input});
  const Shape shape = check_shapes(self, target);
  TORCH_CHECK(target.sizes().equals(is_target.sizes()), "Expected tensor for argument #3 'target' ",
              "to have same size as tensor for argument #5 'is_target'; but ", target.sizes(),
              " does not equal ", is_target.sizes(), " (while checking arguments for ",
              "multilabel_margin_loss_backward_cpu_template)");
  grad_input.resize_as_(self);
  if (grad_input.numel() == 0) return;
  TORCH_CHECK(grad_input.is_contiguous(), "grad_input must be contiguous");
  check_dtypes("multilabel_margin_loss_backward_out_frame", self, target);
  check_targets(op_name, target.reshape({shape.samples, shape.classes}), shape.classes, 3);
  TORCH_CHECK(is_target.scalar_type() == self.scalar_type(), "expected scalar type ",
              self.scalar_type(), " but found ", is_target.scalar_type());
  const std::vector<int64_t> sizes = {shape.samples, shape.classes};
  at::Tensor input = self.reshape(sizes);
  at::Tensor targets = target.reshape(sizes);
  at::Tensor marks = is_target.reshape(sizes);
  at::Tensor counts = target_counts(op_name, targets);
  const c10::Scalar scalars[] = {input.stride(1)};
  auto count_active = [](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ValueId active = pair_active(builder, context.inputs, context.scalars, nullptr);
    return builder.select(active, builder.constant(1, DType::kInt64), builder.constant(0, DType::kInt64));
  };
  const int64_t last[] = {2};
  ReductionSpec count_spec;
  count_spec.op = ir::ReduceOp::kSum;
  count_spec.element = count_active;
  // raised[n, d]: the active pairs with class d.
  at::Tensor raised = at::empty(sizes, target.options());
  launch_reduction(op_name, "multilabel_margin_raised", pair_inputs(input, targets, counts, marks, true),
                   {keepdim_view(raised, 3, last)}, last, scalars, count_spec);
  // per_slot[n, j]: the active pairs of target slot j.
  at::Tensor per_slot = at::empty(sizes, target.options());
  launch_reduction(op_name, "multilabel_margin_per_slot", pair_inputs(input, targets, counts, marks, false),
                   {keepdim_view(per_slot, 3, last)}, last, scalars, count_spec);
  // lowered[n, c]: the active pairs of every used slot holding class c.
  at::Tensor lowered = at::empty(sizes, target.options());
  {
    auto inputs = without_undefined(pair_inputs(input, targets, counts, at::Tensor(), true));
    inputs[kIsTarget] = per_slot.unsqueeze(1).expand({shape.samples, shape.classes, shape.classes});
    ReductionSpec spec;
    spec.op = ir::ReduceOp::kSum;
    spec.element = [](ReductionContext& context) {
      ir::Builder& builder = context.builder;
      ValueId hit = builder.binary(OpCode::kLogicalAnd, slot_used(builder, context.inputs),
                                   builder.binary(OpCode::kEqual, context.inputs[kTargetAtSlot], context.inputs[kClassIndex]));
      return builder.select(hit, context.inputs[kIsTarget], builder.constant(0, DType::kInt64));
    };
    launch_reduction(op_name, "multilabel_margin_lowered", inputs, {keepdim_view(lowered, 3, last)},
                     last, scalars, spec);
  }
  const double scale = reduction == at::Reduction::Mean
                           ? 1. / static_cast<double>(shape.samples * shape.classes)
                           : 1. / static_cast<double>(shape.classes);
  const bool per_sample = reduction == at::Reduction::None && grad_output.dim() > 0;
  at::Tensor grads = per_sample ? grad_output.reshape({shape.samples}).unsqueeze(1).expand(sizes)
                                : grad_output.reshape({1}).as_strided(sizes, {0, 0});
  const at::Tensor inputs[] = {raised, lowered, grads};
  const c10::Scalar gradient_scalars[] = {scalar_as(scale, self.scalar_type())};
  launch_elementwise(op_name, "multilabel_margin_backward", inputs, {grad_input.view(sizes)},
                     gradient_scalars, [](ElementwiseContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    const DType type = builder.dtype_of(context.inputs[2]);
    ValueId net = builder.cast(builder.binary(OpCode::kSubtract, context.inputs[0], context.inputs[1]), type);
    ValueId g = builder.cast(context.scalars[0], type);
    return {builder.binary(OpCode::kMultiply, builder.binary(OpCode::kMultiply, net, g), context.inputs[2])};
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> multilabel_margin_loss_forward(const at::Tensor& self,
                                                                  const at::Tensor& target,
                                                                  int64_t reduction) {
  at::Tensor output = at::empty({0}, self.options());
  at::Tensor is_target = at::empty({0}, self.options());
  forward_into("aten::multilabel_margin_loss_forward", self, target, reduction, output, is_target);
  return {output, is_target};
}

std::tuple<at::Tensor&, at::Tensor&> multilabel_margin_loss_forward_out(
    const at::Tensor& self, const at::Tensor& target, int64_t reduction, at::Tensor& output,
    at::Tensor& is_target) {
  forward_into("aten::multilabel_margin_loss_forward.output", self, target, reduction, output, is_target);
  return {output, is_target};
}

at::Tensor multilabel_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, int64_t reduction,
                                           const at::Tensor& is_target) {
  at::Tensor grad_input = at::empty({0}, self.options());
  backward_into("aten::multilabel_margin_loss_backward", grad_output, self, target, reduction,
                is_target, grad_input);
  return grad_input;
}

at::Tensor& multilabel_margin_loss_backward_out(const at::Tensor& grad_output,
                                                const at::Tensor& self, const at::Tensor& target,
                                                int64_t reduction, const at::Tensor& is_target,
                                                at::Tensor& grad_input) {
  backward_into("aten::multilabel_margin_loss_backward.grad_input", grad_output, self, target,
                reduction, is_target, grad_input);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
