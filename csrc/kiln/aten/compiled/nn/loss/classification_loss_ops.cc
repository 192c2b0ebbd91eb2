#include "kiln/aten/compiled/nn/loss/classification_loss_ops.h"

#include <ATen/TensorIterator.h>
#include <ATen/core/Reduction.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/squeeze.h>
#include <ATen/ops/sum.h>
#include <c10/util/accumulate.h>

#include <optional>
#include <string>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/launch/index_checks.h"
#include "kiln/aten/compiled/launch/pointwise.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/reduction.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::DType;
using ir::OpCode;
using ir::ValueId;

// What the range check finds, worst first (the reduction keeps the maximum).
enum RangeViolation : int64_t { kInRange = 0, kTargetOutOfRange = 1, kInputOutOfRange = 2 };

const at::Tensor& defined_or_empty(const std::optional<at::Tensor>& tensor) {
  static const at::Tensor undefined;
  return tensor.has_value() ? *tensor : undefined;
}

// Raises the CPU's "all elements of input (target) should be between 0 and 1"
// when a value of `input` or `target` (both broadcast to `sizes`) is outside
// [0, 1] or NaN. The CPU checks inside its loss kernel; kiln looks first, so
// nothing is written when the check fails.
void check_probabilities(const char* op_name, const at::Tensor& input, const at::Tensor& target,
                         at::IntArrayRef sizes) {
  if (c10::multiply_integers(sizes) == 0) return;
  at::Tensor inputs[] = {input.expand(sizes), target.expand(sizes)};
  if (sizes.empty()) {
    for (at::Tensor& tensor : inputs) tensor = tensor.as_strided({1}, {1});
  }
  const int64_t rank = inputs[0].dim();
  c10::DimVector dims;
  for (int64_t dim = 0; dim < rank; ++dim) dims.push_back(dim);
  at::Tensor worst = at::empty({}, input.options().dtype(at::kLong));
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kMax;
  spec.element = [](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    auto outside = [&](ValueId value) {
      DType type = builder.dtype_of(value);
      ValueId inside = builder.binary(
          OpCode::kLogicalAnd, builder.binary(OpCode::kGreaterEqual, value, builder.constant(0, type)),
          builder.binary(OpCode::kLessEqual, value, builder.constant(1, type)));
      return builder.unary(OpCode::kLogicalNot, inside);
    };
    auto code = [&](RangeViolation violation) { return builder.constant(violation, DType::kInt64); };
    return builder.select(outside(context.inputs[0]), code(kInputOutOfRange),
                          builder.select(outside(context.inputs[1]), code(kTargetOutOfRange),
                                         code(kInRange)));
  };
  launch_reduction(op_name, "binary_cross_entropy_range", inputs,
                   {keepdim_view(worst, rank, dims)}, dims, {}, spec);
  check_device_value(op_name, worst, ErrorType::kRuntimeError,
                     [](int64_t value) -> std::optional<std::string> {
                       if (value == kInputOutOfRange) return "all elements of input should be between 0 and 1";
                       if (value == kTargetOutOfRange) return "all elements of target should be between 0 and 1";
                       return std::nullopt;
                     });
}

// (target - 1) * max(log1p(-input), -100) - target * max(log(input), -100),
// each step rounded to the dtype as the CPU's scalar_t arithmetic rounds it.
std::vector<ValueId> loss_body(PointwiseContext& context) {
  ir::Builder& builder = context.builder;
  const DType type = context.common;
  auto round = [&](ValueId value) { return builder.cast(value, type); };
  ValueId input = context.promoted(0), target = context.promoted(1);
  ValueId floor = round(context.constant(-100));
  ValueId log_complement = builder.binary(
      OpCode::kMaximum, round(builder.unary(OpCode::kLog1p, builder.unary(OpCode::kNegate, input))), floor);
  ValueId log_input = builder.binary(OpCode::kMaximum, round(builder.unary(OpCode::kLog, input)), floor);
  ValueId first = round(builder.binary(
      OpCode::kMultiply, round(builder.binary(OpCode::kSubtract, target, round(context.constant(1)))),
      log_complement));
  ValueId second = round(builder.binary(OpCode::kMultiply, target, log_input));
  return {round(builder.binary(OpCode::kSubtract, first, second))};
}

// grad * (input - target) / max((1 - input) * input, 1e-12), rounded per step
// (1e-12 itself rounds to 0 in float16, as the CPU's scalar_t(EPSILON) does).
std::vector<ValueId> gradient_body(PointwiseContext& context) {
  ir::Builder& builder = context.builder;
  const DType type = context.common;
  auto round = [&](ValueId value) { return builder.cast(value, type); };
  ValueId grad = context.promoted(0), input = context.promoted(1), target = context.promoted(2);
  ValueId numerator = round(builder.binary(
      OpCode::kMultiply, grad, round(builder.binary(OpCode::kSubtract, input, target))));
  ValueId complement = round(builder.binary(OpCode::kSubtract, round(context.constant(1)), input));
  ValueId variance = round(builder.binary(OpCode::kMultiply, complement, input));
  ValueId denominator = builder.binary(OpCode::kMaximum, variance, round(context.constant(1e-12)));
  return {round(builder.binary(OpCode::kDivide, numerator, denominator))};
}

// Into `loss`, already shaped like `self`.
void run_forward(const char* op_name, const at::Tensor& self, const at::Tensor& target,
                 const at::Tensor& weight, int64_t reduction, at::Tensor& loss) {
  check_same_device({self, target, weight, loss});
  at::Tensor squeezed_loss = at::squeeze(loss);
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(squeezed_loss)
                                .add_owned_const_input(at::squeeze(self))
                                .add_owned_const_input(at::squeeze(target))
                                .build();
  check_dispatch_dtype("binary_cross_entropy", loss.scalar_type(), kFloatingTypes);
  check_probabilities(op_name, iter.input(0), iter.input(1), iter.output(0).sizes());
  launch_pointwise(op_name, "binary_cross_entropy", iter, {}, loss_body);
  if (weight.defined()) loss.mul_(weight);
  if (reduction != at::Reduction::None) {
    at::Tensor reduced = reduction == at::Reduction::Mean ? at::mean(loss) : at::sum(loss);
    loss.resize_as_(reduced).copy_(reduced);
  }
}

void run_backward(const char* op_name, const at::Tensor& grad_output, const at::Tensor& self,
                  const at::Tensor& target, const at::Tensor& weight, int64_t reduction,
                  at::Tensor& grad_input) {
  check_same_device({grad_output, self, target, weight, grad_input});
  at::Tensor squeezed_grad_input = at::squeeze(grad_input);
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(squeezed_grad_input)
                                .add_owned_const_input(at::squeeze(grad_output))
                                .add_owned_const_input(at::squeeze(self))
                                .add_owned_const_input(at::squeeze(target))
                                .build();
  check_dispatch_dtype("binary_cross_entropy_backward", grad_input.scalar_type(), kFloatingTypes);
  launch_pointwise(op_name, "binary_cross_entropy_backward", iter, {}, gradient_body);
  if (weight.defined()) grad_input.mul_(weight);
  if (reduction == at::Reduction::Mean) grad_input.div_(self.numel());
}

}  // namespace

at::Tensor binary_cross_entropy(const at::Tensor& self, const at::Tensor& target,
                                const std::optional<at::Tensor>& weight, int64_t reduction) {
  at::Tensor loss = at::empty_like(self);
  run_forward("aten::binary_cross_entropy", self, target, defined_or_empty(weight), reduction, loss);
  return loss;
}

at::Tensor& binary_cross_entropy_out(const at::Tensor& self, const at::Tensor& target,
                                     const std::optional<at::Tensor>& weight, int64_t reduction,
                                     at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  run_forward("aten::binary_cross_entropy.out", self, target, defined_or_empty(weight), reduction, out);
  return out;
}

at::Tensor binary_cross_entropy_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                         const at::Tensor& target,
                                         const std::optional<at::Tensor>& weight, int64_t reduction) {
  at::Tensor grad_input = at::empty_like(self, LEGACY_CONTIGUOUS_MEMORY_FORMAT);
  run_backward("aten::binary_cross_entropy_backward", grad_output, self, target,
               defined_or_empty(weight), reduction, grad_input);
  return grad_input;
}

at::Tensor& binary_cross_entropy_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                              const at::Tensor& target,
                                              const std::optional<at::Tensor>& weight,
                                              int64_t reduction, at::Tensor& grad_input) {
  at::native::resize_output(grad_input, self.sizes());
  run_backward("aten::binary_cross_entropy_backward.grad_input", grad_output, self, target,
               defined_or_empty(weight), reduction, grad_input);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
