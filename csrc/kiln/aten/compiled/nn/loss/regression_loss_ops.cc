#include "kiln/aten/compiled/nn/loss/regression_loss_ops.h"

#include <ATen/TensorIterator.h>
#include <ATen/core/Reduction.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/mse_loss_meta.h>
#include <ATen/ops/sum.h>

#include "kiln/aten/compiled/launch/pointwise.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

// (a - b)^2 with the difference rounded to the common dtype, as the CPU's
// float16/bfloat16 vector arithmetic rounds each operation.
std::vector<ValueId> squared_difference(PointwiseContext& context) {
  ValueId difference = context.builder.cast(
      context.binary(OpCode::kSubtract, context.promoted(0), context.promoted(1)), context.common);
  return {context.binary(OpCode::kMultiply, difference, difference)};
}

using MseIterator = StructuredIterator<at::meta::structured_mse_loss>;

const at::Tensor& run_mse_loss(const char* op_name, MseIterator& iter, const at::Tensor& self,
                               const at::Tensor& target, int64_t reduction) {
  iter.meta(self, target, reduction);
  check_dispatch_dtype("mse_cpu", dispatch_dtype(iter), kFloatingTypes);
  if (reduction == at::Reduction::None) {
    launch_pointwise(op_name, "mse", iter, {}, squared_difference);
    return iter.result();
  }
  // The meta function resized the output to a scalar: the losses go to a
  // temporary, then into it through the compiled mean or sum.
  at::Tensor losses;
  at::TensorIterator elementwise = at::TensorIterator::borrowing_binary_op(losses, self, target);
  launch_pointwise(op_name, "mse", elementwise, {}, squared_difference);
  at::Tensor result = iter.result();
  if (reduction == at::Reduction::Mean) {
    at::mean_out(result, elementwise.output(), at::IntArrayRef{});
  } else {
    at::sum_out(result, elementwise.output(), at::IntArrayRef{});
  }
  return iter.result();
}

}  // namespace

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  MseIterator iter;
  return run_mse_loss("aten::mse_loss", iter, self, target, reduction);
}

at::Tensor& mse_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction,
                         at::Tensor& out) {
  MseIterator iter(out, Target::kOut);
  run_mse_loss("aten::mse_loss.out", iter, self, target, reduction);
  return out;
}

at::Tensor& mse_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const at::Tensor& target, int64_t reduction,
                                  at::Tensor& grad_input) {
  const double norm = reduction == at::Reduction::Mean ? 2. / static_cast<double>(self.numel()) : 2.;
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(grad_input)
                                .add_const_input(self)
                                .add_const_input(target)
                                .add_const_input(grad_output)
                                .build();
  check_dispatch_dtype("mse_backward_cpu_out", iter.dtype(0), kFloatingTypes);
  const c10::Scalar scalars[] = {scalar_as(norm, iter.dtype(0))};
  launch_pointwise("aten::mse_loss_backward.grad_input", "mse_backward", iter, scalars,
                   [](PointwiseContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    ValueId difference = builder.cast(
        context.binary(OpCode::kSubtract, context.promoted(0), context.promoted(1)), context.common);
    ValueId scaled = builder.cast(
        context.binary(OpCode::kMultiply, context.scalar_as(0, context.common), difference),
        context.common);
    return {context.binary(OpCode::kMultiply, scaled, context.promoted(2))};
  });
  return grad_input;
}

at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& target, int64_t reduction) {
  at::Tensor grad_input = at::empty_like(self, LEGACY_CONTIGUOUS_MEMORY_FORMAT);
  return mse_loss_backward_out(grad_output, self, target, reduction, grad_input);
}

}  // namespace kiln::torch_integration::compiled
