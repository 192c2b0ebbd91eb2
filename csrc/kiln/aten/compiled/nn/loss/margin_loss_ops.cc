#include "kiln/aten/compiled/nn/loss/margin_loss_ops.h"

#include <ATen/core/Reduction.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>

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


// Kernel inputs, all of the [samples, classes] shape.
enum Input { kInput, kTarget, kInputAtClassZero, kClass, kWeight };
// Launch scalars of every kernel, in this order.
enum Scalar { kMargin, kClassStride, kWeightStride, kClasses, kGradScale, kScalarCount };

const at::Tensor& defined_or_empty(const std::optional<at::Tensor>& tensor) {
  static const at::Tensor undefined;
  return tensor.has_value() ? *tensor : undefined;
}

struct Shape {
  int64_t samples;
  int64_t classes;
};

Shape check_shapes(const at::Tensor& input, const at::Tensor& target, const at::Tensor& weight,
                   const c10::Scalar& p) {
  TORCH_CHECK(p.toLong() == 1 || p.toLong() == 2, "only p == 1 and p == 2 supported");
  const int64_t dims = input.dim();
  Shape shape{dims <= 1 ? 1 : input.size(0), dims == 0 ? 1 : input.size(dims - 1)};
  TORCH_CHECK((dims == 2 && input.size(1) != 0) || (dims == 1 && input.size(0) != 0) || dims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              input.sizes());
  TORCH_CHECK(target.dim() <= 1 && target.numel() == shape.samples,
              "inconsistent target size, expected ", shape.samples, " but got ", target.sizes());
  if (weight.defined()) {
    TORCH_CHECK(weight.dim() <= 1 && weight.numel() == shape.classes,
                "inconsistent weight size, expected ", shape.classes, " but got ", weight.sizes());
  }
  return shape;
}

// The CPU reads the target as int64 and the weight as the input's dtype.
void check_dtypes(const char* kernel, const at::Tensor& input, const at::Tensor& target,
                  const at::Tensor& weight) {
  check_dispatch_dtype(kernel, input.scalar_type(), kFloatAndDoubleTypes);
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
  TORCH_CHECK(!weight.defined() || weight.scalar_type() == input.scalar_type(),
              "expected scalar type ", input.scalar_type(), " but found ", weight.scalar_type());
}

// Raises "target out of range" for a target outside [0, classes).
void check_targets(const char* op_name, const at::Tensor& targets, int64_t classes) {
  const int64_t dims[] = {0};
  at::Tensor worst = at::empty({}, targets.options());
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kMax;
  spec.element = [](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ValueId value = context.inputs[0];
    ValueId outside = builder.binary(
        OpCode::kLogicalOr, builder.binary(OpCode::kLess, value, builder.constant(0, DType::kInt64)),
        builder.binary(OpCode::kGreaterEqual, value, context.scalars[0]));
    return builder.select(outside, builder.constant(1, DType::kInt64), builder.constant(0, DType::kInt64));
  };
  const c10::Scalar scalars[] = {classes};
  launch_reduction(op_name, "multi_margin_target_bounds", {targets}, {keepdim_view(worst, 1, dims)},
                   dims, scalars, spec);
  check_device_value(op_name, worst, ErrorType::kRuntimeError,
                     [](int64_t value) -> std::optional<std::string> {
                       if (value == 0) return std::nullopt;
                       return std::string("target out of range");
                     });
}

// The operands as [samples, classes] tensors, in Input order.
struct Operands {
  c10::SmallVector<at::Tensor, 5> inputs;
  c10::SmallVector<c10::Scalar, kScalarCount> scalars;
  at::Tensor targets;  // [samples]
};

Operands operands_of(const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight,
                     const c10::Scalar& margin, Shape shape, double grad_scale) {
  const std::vector<int64_t> sizes = {shape.samples, shape.classes};
  Operands result;
  at::Tensor input = self.reshape(sizes);
  result.targets = target.reshape({shape.samples});
  result.inputs.push_back(input);
  result.inputs.push_back(result.targets.unsqueeze(1).expand(sizes));
  result.inputs.push_back(input.select(1, 0).unsqueeze(1).expand(sizes));
  result.inputs.push_back(at::arange(shape.classes, target.options()).unsqueeze(0).expand(sizes));
  if (weight.defined()) {
    result.inputs.push_back(weight.reshape({shape.classes}).as_strided(sizes, {0, 0}));
  }
  const c10::ScalarType type = self.scalar_type();
  result.scalars = {scalar_as(margin, type), input.stride(1),
                    weight.defined() ? weight.reshape({shape.classes}).stride(0) : 0,
                    static_cast<double>(shape.classes), scalar_as(grad_scale, type)};
  return result;
}

// The terms of one (sample, class) pair, in the CPU's order of operations.
struct Term {
  ValueId is_target;  // the class is the sample's target
  ValueId active;     // not the target and z > 0
  ValueId z;          // margin - x[t] + x[d]
  ValueId weight;     // weight[t], or null without weight
};

template <typename Context>
Term term_of(Context& context, bool has_weight) {
  ir::Builder& builder = context.builder;
  const DType type = builder.dtype_of(context.inputs[kInput]);
  ValueId target = builder.cast(context.inputs[kTarget], DType::kInt64);
  ValueId zero_index = builder.constant(0, DType::kInt64);
  ValueId in_range = builder.binary(
      OpCode::kLogicalAnd, builder.binary(OpCode::kGreaterEqual, target, zero_index),
      builder.binary(OpCode::kLess, target, builder.cast(context.scalars[kClasses], DType::kInt64)));
  // Out-of-range targets were refused; clamping keeps the loads inside.
  ValueId safe = builder.select(in_range, target, zero_index);
  ValueId at_target = builder.indexed_load(kInputAtClassZero,
                                           builder.binary(OpCode::kMultiply, safe, context.scalars[kClassStride]));
  Term term;
  ValueId margin = builder.cast(context.scalars[kMargin], type);
  term.z = builder.binary(OpCode::kAdd, builder.binary(OpCode::kSubtract, margin, at_target),
                          context.inputs[kInput]);
  term.is_target = builder.binary(OpCode::kEqual, context.inputs[kClass], safe);
  term.active = builder.binary(OpCode::kLogicalAnd, builder.unary(OpCode::kLogicalNot, term.is_target),
                               builder.binary(OpCode::kGreater, term.z, builder.constant(0, type)));
  term.weight = has_weight ? builder.indexed_load(kWeight, builder.binary(OpCode::kMultiply, safe,
                                                                          context.scalars[kWeightStride]))
                           : ValueId{};
  return term;
}

// The loss term h (forward) or the gradient h (backward) of an active pair.
template <typename Context>
ValueId weighted(Context& context, const Term& term, ValueId value, bool has_weight) {
  return has_weight ? context.builder.binary(OpCode::kMultiply, value, term.weight) : value;
}

template <typename Context>
ValueId gradient_term(Context& context, const Term& term, bool squared, bool has_weight) {
  ir::Builder& builder = context.builder;
  const DType type = builder.dtype_of(term.z);
  ValueId g = builder.cast(context.scalars[kGradScale], type);
  ValueId h = squared ? builder.binary(OpCode::kMultiply,
                                       builder.binary(OpCode::kMultiply, builder.constant(2, type), g), term.z)
                      : g;
  h = weighted(context, term, h, has_weight);
  return builder.select(term.active, h, builder.constant(0, type));
}

std::string key_of(const char* base, bool squared, bool has_weight) {
  return std::string(base) + (squared ? "_p2" : "_p1") + (has_weight ? "_weight" : "");
}

// The per-sample losses into `losses` ([samples]).
void launch_losses(const char* op_name, const Operands& operands, bool squared, bool has_weight,
                   const at::Tensor& losses) {
  const int64_t dims[] = {1};
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kSum;
  spec.element = [squared, has_weight](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    Term term = term_of(context, has_weight);
    const DType type = builder.dtype_of(term.z);
    ValueId h = squared ? builder.binary(OpCode::kMultiply, term.z, term.z) : term.z;
    h = weighted(context, term, h, has_weight);
    return builder.select(term.active, h, builder.constant(0, type));
  };
  spec.epilogue = [](ReductionContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    ValueId total = builder.accumulator();
    return {builder.binary(OpCode::kDivide, total,
                           builder.cast(context.scalars[kClasses], builder.dtype_of(total)))};
  };
  launch_reduction(op_name, key_of("multi_margin_loss", squared, has_weight), operands.inputs,
                   {keepdim_view(losses, 2, dims)}, dims, operands.scalars, spec);
}

void forward_into(const char* op_name, const at::Tensor& self, const at::Tensor& target,
                  const c10::Scalar& p, const c10::Scalar& margin, const at::Tensor& weight,
                  int64_t reduction, at::Tensor& output) {
  check_same_device({self, target, weight, output});
  const Shape shape = check_shapes(self, target, weight, p);
  if (reduction == at::Reduction::None && target.dim() > 0) {
    output.resize_({shape.samples});
  } else {
    output.resize_({});
  }
  if (self.numel() == 0) {
    // The CPU leaves the output unwritten here; a mean of nothing is NaN.
    if (output.dim() == 0) output.fill_(reduction == at::Reduction::Mean ? NAN : 0.0);
    return;
  }
  check_dtypes("multi_margin_loss_cpu_kernel", self, target, weight);
  const Operands operands = operands_of(self, target, weight, margin, shape, 0.0);
  check_targets(op_name, operands.targets, shape.classes);
  const bool squared = p.toLong() == 2, has_weight = weight.defined();
  if (reduction == at::Reduction::None && output.dim() > 0) {
    launch_losses(op_name, operands, squared, has_weight, output);
    return;
  }
  at::Tensor losses = at::empty({shape.samples}, self.options());
  launch_losses(op_name, operands, squared, has_weight, losses);
  // The CPU adds the samples' losses in double.
  at::Tensor total = at::sum(losses, {0}, false, at::kDouble);
  if (reduction == at::Reduction::Mean) total = at::div(total, shape.samples);
  output.copy_(total);
}

void backward_into(const char* op_name, const at::Tensor& grad_output, const at::Tensor& self,
                   const at::Tensor& target, const c10::Scalar& p, const c10::Scalar& margin,
                   const at::Tensor& weight, int64_t reduction, at::Tensor& grad_input) {
  check_same_device({grad_output, self, target, weight, grad_input});
  const Shape shape = check_shapes(self, target, weight, p);
  grad_input.resize_as_(self);
  TORCH_CHECK(grad_input.is_contiguous(), "grad_input must be contiguous");
  if (self.numel() == 0) return;
  check_dtypes("multi_margin_loss_backward_cpu_kernel", self, target, weight);
  const double scale = reduction == at::Reduction::Mean
                           ? 1. / static_cast<double>(shape.samples * shape.classes)
                           : 1. / static_cast<double>(shape.classes);
  Operands operands = operands_of(self, target, weight, margin, shape, scale);
  check_targets(op_name, operands.targets, shape.classes);
  const bool squared = p.toLong() == 2, has_weight = weight.defined();

  // The target's own gradient: minus the sum of the others.
  at::Tensor others = at::empty({shape.samples}, self.options());
  const int64_t dims[] = {1};
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kSum;
  spec.element = [squared, has_weight](ReductionContext& context) {
    return gradient_term(context, term_of(context, has_weight), squared, has_weight);
  };
  launch_reduction(op_name, key_of("multi_margin_loss_backward_target", squared, has_weight),
                   operands.inputs, {keepdim_view(others, 2, dims)}, dims, operands.scalars, spec);

  const std::vector<int64_t> sizes = {shape.samples, shape.classes};
  const bool per_sample = reduction == at::Reduction::None && grad_output.dim() > 0;
  const int others_input = static_cast<int>(operands.inputs.size());
  operands.inputs.push_back(others.unsqueeze(1).expand(sizes));
  operands.inputs.push_back(per_sample ? grad_output.reshape({shape.samples}).unsqueeze(1).expand(sizes)
                                       : grad_output.reshape({1}).as_strided(sizes, {0, 0}));
  at::Tensor result = grad_input.view(sizes);
  launch_elementwise(op_name, key_of("multi_margin_loss_backward", squared, has_weight),
                     operands.inputs, {result}, operands.scalars,
                     [=](ElementwiseContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    Term term = term_of(context, has_weight);
    ValueId own = builder.unary(OpCode::kNegate, context.inputs[others_input]);
    ValueId gradient = builder.select(term.is_target, own, gradient_term(context, term, squared, has_weight));
    return {builder.binary(OpCode::kMultiply, gradient, context.inputs[others_input + 1])};
  });
}

}  // namespace

at::Tensor multi_margin_loss(const at::Tensor& self, const at::Tensor& target, const c10::Scalar& p,
                             const c10::Scalar& margin, const std::optional<at::Tensor>& weight,
                             int64_t reduction) {
  at::Tensor output = at::empty({0}, self.options());
  forward_into("aten::multi_margin_loss", self, target, p, margin, defined_or_empty(weight),
               reduction, output);
  return output;
}

at::Tensor& multi_margin_loss_out(const at::Tensor& self, const at::Tensor& target,
                                  const c10::Scalar& p, const c10::Scalar& margin,
                                  const std::optional<at::Tensor>& weight, int64_t reduction,
                                  at::Tensor& out) {
  forward_into("aten::multi_margin_loss.out", self, target, p, margin, defined_or_empty(weight),
               reduction, out);
  return out;
}

at::Tensor multi_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                      const at::Tensor& target, const c10::Scalar& p,
                                      const c10::Scalar& margin,
                                      const std::optional<at::Tensor>& weight, int64_t reduction) {
  at::Tensor grad_input = at::empty({0}, self.options());
  backward_into("aten::multi_margin_loss_backward", grad_output, self, target, p, margin,
                defined_or_empty(weight), reduction, grad_input);
  return grad_input;
}

at::Tensor& multi_margin_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, const c10::Scalar& p,
                                           const c10::Scalar& margin,
                                           const std::optional<at::Tensor>& weight,
                                           int64_t reduction, at::Tensor& grad_input) {
  backward_into("aten::multi_margin_loss_backward.grad_input", grad_output, self, target, p, margin,
                defined_or_empty(weight), reduction, grad_input);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
