#include "kiln/aten/compiled/nn/loss/robust_regression_loss_ops.h"

#include <ATen/TensorIterator.h>
#include <ATen/core/Reduction.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/smooth_l1_loss_meta.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/launch/pointwise.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::DType;
using ir::OpCode;
using ir::ValueId;

enum class Loss { kSmoothL1, kHuber };

// How a kernel rounds: to the storage dtype after every step (float16, and
// every huber dtype), or once at the end (bfloat16 smooth_l1, which the CPU
// computes in float).
struct Rounding {
  PointwiseContext& context;
  bool per_step;
  ValueId operator()(ValueId value) const {
    return per_step ? context.builder.cast(value, context.common) : value;
  }
  ValueId operand(int index) const {
    ValueId value = context.promoted(index);
    return per_step ? value : context.builder.cast(value, DType::kFloat32);
  }
  DType math_dtype() const { return per_step ? ir::compute_dtype(context.common) : DType::kFloat32; }
};

// Which half-type kernels the CPU computes wholly in float (found by
// comparing its results bit for bit): smooth_l1's bfloat16 forward and both
// half types' backward, huber's float16 forward. The others round each step.
bool computes_in_float(Loss loss, c10::ScalarType type, bool backward) {
  if (loss == Loss::kSmoothL1) {
    return backward ? (type == c10::kHalf || type == c10::kBFloat16) : type == c10::kBFloat16;
  }
  return !backward && type == c10::kHalf;
}

// The threshold (beta or delta) as the CPU's kernel holds it.
c10::Scalar threshold_scalar(double value, c10::ScalarType type, bool in_float) {
  return in_float ? scalar_as(value, c10::kFloat) : scalar_as(value, type);
}

// Scalars: 0 the threshold. smooth_l1: |x| < beta ? 0.5 x^2 / beta : |x| - 0.5 beta;
// huber: |x| < delta ? 0.5 x^2 : delta (|x| - 0.5 delta).
PointwiseBody forward_body(Loss loss, bool per_step) {
  return [loss, per_step](PointwiseContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    Rounding round{context, per_step};
    const DType math = round.math_dtype();
    ValueId threshold = builder.cast(context.scalars[0], math);
    ValueId half = builder.constant(0.5, math);
    ValueId distance = round(builder.unary(
        OpCode::kAbs, round(builder.binary(OpCode::kSubtract, round.operand(0), round.operand(1)))));
    ValueId squared = round(builder.binary(
        OpCode::kMultiply, round(builder.binary(OpCode::kMultiply, half, distance)), distance));
    ValueId half_threshold = round(builder.binary(OpCode::kMultiply, half, threshold));
    ValueId beyond = round(builder.binary(OpCode::kSubtract, distance, half_threshold));
    ValueId small, large;
    if (loss == Loss::kSmoothL1) {
      small = round(builder.binary(OpCode::kDivide, squared, threshold));
      large = beyond;
    } else {
      small = squared;
      large = round(builder.binary(OpCode::kMultiply, threshold, beyond));
    }
    ValueId inside = builder.binary(OpCode::kLess, distance, threshold);
    return {builder.cast(builder.select(inside, small, large), context.common)};
  };
}

// Inputs: input, target, grad_output; scalars: 0 the threshold, 1 norm.
PointwiseBody backward_body(Loss loss, bool per_step) {
  return [loss, per_step](PointwiseContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    Rounding round{context, per_step};
    const DType math = round.math_dtype();
    ValueId threshold = builder.cast(context.scalars[0], math);
    ValueId norm = builder.cast(context.scalars[1], math);
    ValueId grad = round.operand(2);
    ValueId difference = round(builder.binary(OpCode::kSubtract, round.operand(0), round.operand(1)));
    ValueId positive = round(builder.binary(OpCode::kMultiply, norm, grad));
    ValueId negative = round(builder.binary(OpCode::kMultiply, builder.unary(OpCode::kNegate, norm), grad));
    ValueId inside = round(builder.binary(
        OpCode::kMultiply, round(builder.binary(OpCode::kMultiply, norm, difference)), grad));
    if (loss == Loss::kSmoothL1) {
      inside = round(builder.binary(OpCode::kDivide, inside, threshold));
    } else {
      positive = round(builder.binary(OpCode::kMultiply, positive, threshold));
      negative = round(builder.binary(OpCode::kMultiply, negative, threshold));
    }
    ValueId below = builder.binary(OpCode::kLessEqual, difference, builder.unary(OpCode::kNegate, threshold));
    ValueId above = builder.binary(OpCode::kGreaterEqual, difference, threshold);
    ValueId result = builder.select(below, negative, builder.select(above, positive, inside));
    return {builder.cast(result, context.common)};
  };
}

void launch_forward(const char* op_name, Loss loss, at::TensorIteratorBase& iter, double threshold) {
  const c10::ScalarType type = dispatch_dtype(iter);
  check_dispatch_dtype(loss == Loss::kSmoothL1 ? "smooth_l1_cpu" : "huber_cpu", type, kFloatingTypes);
  const bool per_step = !computes_in_float(loss, type, /*backward=*/false);
  const c10::Scalar scalars[] = {threshold_scalar(threshold, type, !per_step)};
  const char* key = loss == Loss::kSmoothL1 ? (per_step ? "smooth_l1_loss" : "smooth_l1_loss_float")
                                            : (per_step ? "huber_loss" : "huber_loss_float");
  launch_pointwise(op_name, key, iter, scalars, forward_body(loss, per_step));
}

void reduce_into(const at::Tensor& result, const at::Tensor& losses, int64_t reduction) {
  if (reduction == at::Reduction::Mean) {
    at::mean_out(const_cast<at::Tensor&>(result), losses, at::IntArrayRef{});
  } else {
    at::sum_out(const_cast<at::Tensor&>(result), losses, at::IntArrayRef{});
  }
}

using SmoothL1Iterator = StructuredIterator<at::meta::structured_smooth_l1_loss>;

const at::Tensor& run_smooth_l1(const char* op_name, SmoothL1Iterator& iter, const at::Tensor& self,
                                const at::Tensor& target, int64_t reduction, double beta) {
  iter.meta(self, target, reduction, beta);
  if (reduction == at::Reduction::None) {
    launch_forward(op_name, Loss::kSmoothL1, iter, beta);
    return iter.result();
  }
  // The meta function resized the output to a scalar: the losses go to a
  // temporary, then into it through the compiled mean or sum.
  at::Tensor losses;
  at::TensorIterator elementwise = at::TensorIterator::borrowing_binary_op(losses, self, target);
  launch_forward(op_name, Loss::kSmoothL1, elementwise, beta);
  reduce_into(iter.result(), elementwise.output(), reduction);
  return iter.result();
}

void check_huber_delta(double delta) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
}

at::Tensor& run_backward(const char* op_name, Loss loss, const at::Tensor& grad_output,
                         const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                         double threshold, at::Tensor& grad_input) {
  check_same_device({grad_output, self, target, grad_input});
  const double norm = reduction == at::Reduction::Mean ? 1. / static_cast<double>(self.numel()) : 1.;
  at::TensorIteratorConfig config;
  config.add_output(grad_input).add_const_input(self).add_const_input(target).add_const_input(grad_output);
  if (loss == Loss::kSmoothL1) {
    config.promote_inputs_to_common_dtype(true)
        .cast_common_dtype_to_outputs(true)
        .enforce_safe_casting_to_output(true);
  }
  at::TensorIterator iter = config.build();
  const c10::ScalarType type = iter.dtype(0);
  // The CPU's smooth_l1 backward dispatches over integers too; huber's does not.
  if (loss == Loss::kSmoothL1) {
    check_dispatch_dtype("smooth_l1_backward_cpu_out", type, kNumericTypes);
  } else {
    check_dispatch_dtype("huber_backward_cpu_out", type, kFloatingTypes);
  }
  const bool per_step = !computes_in_float(loss, type, /*backward=*/true);
  const c10::Scalar norm_scalar = per_step ? scalar_as(norm, type) : scalar_as(norm, c10::kFloat);
  const c10::Scalar scalars[] = {threshold_scalar(threshold, type, !per_step), norm_scalar};
  const char* key = loss == Loss::kSmoothL1
                        ? (per_step ? "smooth_l1_loss_backward" : "smooth_l1_loss_backward_float")
                        : "huber_loss_backward";
  launch_pointwise(op_name, key, iter, scalars, backward_body(loss, per_step));
  return grad_input;
}

}  // namespace

at::Tensor smooth_l1_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                          double beta) {
  SmoothL1Iterator iter;
  return run_smooth_l1("aten::smooth_l1_loss", iter, self, target, reduction, beta);
}

at::Tensor& smooth_l1_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                               double beta, at::Tensor& out) {
  SmoothL1Iterator iter(out, Target::kOut);
  run_smooth_l1("aten::smooth_l1_loss.out", iter, self, target, reduction, beta);
  return out;
}

at::Tensor& smooth_l1_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& target, int64_t reduction, double beta,
                                        at::Tensor& grad_input) {
  if (beta <= 0) {
    // The l1 loss's gradient, as the CPU computes it for beta == 0.
    check_same_device({grad_output, self, target, grad_input});
    at::Tensor norm = reduction == at::Reduction::Mean ? at::div(grad_output, self.numel()) : grad_output;
    return at::sub_out(grad_input, self, target).sgn_().mul_(norm);
  }
  return run_backward("aten::smooth_l1_loss_backward.grad_input", Loss::kSmoothL1, grad_output,
                      self, target, reduction, beta, grad_input);
}

at::Tensor huber_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                      double delta) {
  check_huber_delta(delta);
  check_same_device({self, target});
  at::Tensor losses = at::empty_like(self);
  at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(losses, self, target);
  launch_forward("aten::huber_loss", Loss::kHuber, iter, delta);
  if (reduction == at::Reduction::Mean) return at::mean(losses);
  if (reduction == at::Reduction::Sum) return at::sum(losses);
  return losses;
}

at::Tensor& huber_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                           double delta, at::Tensor& out) {
  check_huber_delta(delta);
  check_same_device({self, target, out});
  at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(out, self, target);
  launch_forward("aten::huber_loss.out", Loss::kHuber, iter, delta);
  if (reduction != at::Reduction::None) {
    at::Tensor reduced = reduction == at::Reduction::Mean ? at::mean(out) : at::sum(out);
    out.resize_({});
    out.copy_(reduced);
  }
  return out;
}

at::Tensor& huber_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    const at::Tensor& target, int64_t reduction, double delta,
                                    at::Tensor& grad_input) {
  return run_backward("aten::huber_loss_backward.out", Loss::kHuber, grad_output, self, target,
                      reduction, delta, grad_input);
}

}  // namespace kiln::torch_integration::compiled
