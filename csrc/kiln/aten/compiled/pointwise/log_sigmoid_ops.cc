#include "kiln/aten/compiled/pointwise/log_sigmoid_ops.h"

#include <ATen/TensorIterator.h>
#include <ATen/ops/empty_like.h>

#include "kiln/aten/compiled/launch/pointwise.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

// Into `output` and `buffer` (both contiguous, shaped like `self`).
void run_forward(const char* op_name, const at::Tensor& self, const at::Tensor& output,
                 const at::Tensor& buffer) {
  check_dispatch_dtype("log_sigmoid_cpu", self.scalar_type(), kFloatingTypes);
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(output)
                                .add_output(buffer)
                                .add_const_input(self)
                                .build();
  launch_pointwise(op_name, "log_sigmoid", iter, {},
                   [](PointwiseContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    ValueId x = context.inputs[0];
    ir::DType type = ir::compute_dtype(context.input_dtypes[0]);
    ValueId low = builder.binary(OpCode::kMinimum, x, builder.constant(0, type));
    ValueId buffer = builder.unary(OpCode::kExp, builder.unary(OpCode::kNegate, builder.unary(OpCode::kAbs, x)));
    ValueId result = builder.binary(OpCode::kSubtract, low, builder.unary(OpCode::kLog1p, buffer));
    return {result, buffer};
  });
}

void run_backward(const char* op_name, const at::Tensor& grad_output, const at::Tensor& self,
                  const at::Tensor& buffer, const at::Tensor& grad_input) {
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(grad_input)
                                .add_const_input(self)
                                .add_const_input(buffer)
                                .add_const_input(grad_output)
                                .build();
  check_dispatch_dtype("log_sigmoid_backward_cpu", iter.dtype(0), kFloatingTypes);
  launch_pointwise(op_name, "log_sigmoid_backward", iter, {},
                   [](PointwiseContext& context) -> std::vector<ValueId> {
    ir::Builder& builder = context.builder;
    ValueId x = context.promoted(0), b = context.promoted(1), grad = context.promoted(2);
    ir::DType type = ir::compute_dtype(context.common);
    ValueId zero = builder.constant(0, type), one = builder.constant(1, type);
    ValueId negative = builder.binary(OpCode::kLess, x, zero);
    ValueId max_deriv = builder.select(negative, one, zero);
    ValueId sign = builder.select(negative, one, builder.constant(-1, type));
    ValueId ratio = builder.binary(OpCode::kDivide, b, builder.binary(OpCode::kAdd, one, b));
    ValueId slope = builder.binary(OpCode::kSubtract, max_deriv, builder.binary(OpCode::kMultiply, sign, ratio));
    return {builder.binary(OpCode::kMultiply, slope, grad)};
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self) {
  at::Tensor output = at::empty_like(self, at::MemoryFormat::Contiguous);
  at::Tensor buffer = at::empty_like(self, at::MemoryFormat::Contiguous);
  run_forward("aten::log_sigmoid_forward", self.contiguous(), output, buffer);
  return {output, buffer};
}

std::tuple<at::Tensor&, at::Tensor&> log_sigmoid_forward_out(const at::Tensor& self,
                                                             at::Tensor& output,
                                                             at::Tensor& buffer) {
  // As the CPU's out= form: the buffer must end up contiguous; a
  // non-contiguous output is written through a contiguous temporary.
  output.resize_as_(self);
  buffer.resize_as_(self, at::MemoryFormat::Contiguous);
  TORCH_CHECK(buffer.is_contiguous(), "Contiguous buffer required for log_sigmoid with out parameter");
  at::Tensor target = output.is_contiguous() ? output : at::empty_like(output, at::MemoryFormat::Contiguous);
  run_forward("aten::log_sigmoid_forward.output", self.contiguous(), target, buffer);
  if (!output.is_contiguous()) output.copy_(target);
  return {output, buffer};
}

at::Tensor log_sigmoid_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                const at::Tensor& buffer) {
  at::Tensor grad_input = at::empty_like(grad_output);
  run_backward("aten::log_sigmoid_backward", grad_output, self, buffer, grad_input);
  return grad_input;
}

at::Tensor& log_sigmoid_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                     const at::Tensor& buffer, at::Tensor& grad_input) {
  run_backward("aten::log_sigmoid_backward.grad_input", grad_output, self, buffer, grad_input);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
