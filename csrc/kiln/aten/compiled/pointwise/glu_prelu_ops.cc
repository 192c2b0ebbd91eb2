// glu and prelu: the TensorIterators the CPU builds (glu's structured meta,
// prelu's plain configs), the CPU kernels' formulas in IR. Each backward is
// one kernel with two outputs where the CPU runs a few.
#include "kiln/aten/compiled/pointwise/glu_prelu_ops.h"

#include <ATen/TensorIterator.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/glu_meta.h>

#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

// 1 / (1 + exp(-x)), as the CPU's sigmoid and glu kernels write it.
ValueId sigmoid(PointwiseContext& c, ValueId x) {
  ValueId one = c.constant(1.0);
  return c.binary(OpCode::kDivide, one,
                  c.binary(OpCode::kAdd, one, c.unary(OpCode::kExp, c.unary(OpCode::kNegate, x))));
}

// glu (inputs: first half a, second half b): a * sigmoid(b).
std::vector<ValueId> glu_body(PointwiseContext& c) {
  return {c.binary(OpCode::kMultiply, c.promoted(0), sigmoid(c, c.promoted(1)))};
}

// glu_backward (inputs: a, b, grad; outputs: grad of a, grad of b). The CPU
// stores sigmoid(b) into the first half of grad_input (rounding it to the
// half types) and reads it back for both halves.
std::vector<ValueId> glu_backward_body(PointwiseContext& c) {
  ValueId a = c.promoted(0);
  ValueId gradient = c.promoted(2);
  ValueId s = c.builder.cast(sigmoid(c, c.promoted(1)), c.common);
  ValueId first = c.binary(OpCode::kMultiply, s, gradient);
  ValueId second = c.binary(
      OpCode::kMultiply,
      c.binary(OpCode::kMultiply,
               c.binary(OpCode::kMultiply, c.binary(OpCode::kSubtract, c.constant(1.0), s), s), a),
      gradient);
  return {first, second};
}

// prelu (inputs: self, weight): x > 0 ? x : weight * x.
std::vector<ValueId> prelu_body(PointwiseContext& c) {
  ValueId x = c.promoted(0);
  ValueId positive = c.binary(OpCode::kGreater, x, c.constant(0.0));
  return {c.builder.select(positive, x, c.binary(OpCode::kMultiply, c.promoted(1), x))};
}

// prelu backward (inputs: self, weight, grad; outputs: grad of self, grad of
// weight): x > 0 ? (grad, 0) : (weight * grad, x * grad).
std::vector<ValueId> prelu_backward_body(PointwiseContext& c) {
  ValueId x = c.promoted(0);
  ValueId gradient = c.promoted(2);
  ValueId positive = c.binary(OpCode::kGreater, x, c.constant(0.0));
  ValueId grad_self =
      c.builder.select(positive, gradient, c.binary(OpCode::kMultiply, c.promoted(1), gradient));
  ValueId grad_weight =
      c.builder.select(positive, c.constant(0.0), c.binary(OpCode::kMultiply, x, gradient));
  return {grad_self, grad_weight};
}

const at::Tensor& run_glu(const char* op_name, StructuredIterator<at::meta::structured_glu>& iter,
                          const at::Tensor& self, int64_t dim) {
  iter.meta(self, dim);
  check_dispatch_dtype("glu_cpu", dispatch_dtype(iter), kFloatingTypes);
  launch_rounded(op_name, "glu", iter, {}, glu_body);
  return iter.result();
}

// glu_backward's checks, in the CPU's words, then one kernel writing both
// halves of grad_input (resized to self's shape).
void run_glu_backward(const char* op_name, const at::Tensor& grad_output, const at::Tensor& self,
                      int64_t dim, at::Tensor& grad_input) {
  TORCH_CHECK(self.dim() > 0, "glu does not support 0-dimensional tensors");
  int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  int64_t size = self.size(wrapped);
  TORCH_CHECK(size % 2 == 0, "Halving dimension must be even, but dimension ", wrapped, " is size ",
              size);
  check_dispatch_dtype("glu_backward_cpu", self.scalar_type(), kFloatingTypes);
  grad_input.resize_(self.sizes());
  int64_t half = size / 2;
  // The config borrows its tensors: the views must outlive it.
  at::Tensor grad_first = grad_input.narrow(wrapped, 0, half);
  at::Tensor grad_second = grad_input.narrow(wrapped, half, half);
  at::Tensor first = self.narrow(wrapped, 0, half);
  at::Tensor second = self.narrow(wrapped, half, half);
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(grad_first)
                                .add_output(grad_second)
                                .add_const_input(first)
                                .add_const_input(second)
                                .add_const_input(grad_output)
                                .build();
  launch_rounded(op_name, "glu_backward", iter, {}, glu_backward_body);
}

}  // namespace

at::Tensor glu(const at::Tensor& self, int64_t dim) {
  StructuredIterator<at::meta::structured_glu> iter;
  return run_glu("aten::glu", iter, self, dim);
}

at::Tensor& glu_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  StructuredIterator<at::meta::structured_glu> iter(out, Target::kOut);
  run_glu("aten::glu.out", iter, self, dim);
  return out;
}

at::Tensor glu_backward(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim) {
  at::Tensor grad_input = at::empty({0}, self.options());
  run_glu_backward("aten::glu_backward", grad_output, self, dim, grad_input);
  return grad_input;
}

at::Tensor& glu_backward_out(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim,
                             at::Tensor& grad_input) {
  run_glu_backward("aten::glu_backward.grad_input", grad_output, self, dim, grad_input);
  return grad_input;
}

at::Tensor prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  at::Tensor result = at::empty_like(self);
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(result)
                                .add_const_input(self)
                                .add_const_input(weight)
                                .build();
  check_dispatch_dtype("prelu_cpu", dispatch_dtype(iter), kFloatingTypes);
  launch_rounded("aten::_prelu_kernel", "prelu", iter, {}, prelu_body);
  return result;
}

std::tuple<at::Tensor, at::Tensor> prelu_kernel_backward(const at::Tensor& grad_output,
                                                         const at::Tensor& self,
                                                         const at::Tensor& weight) {
  at::Tensor grad_self = at::empty({0}, self.options());
  at::Tensor grad_weight = at::empty({0}, weight.options());
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(grad_self)
                                .add_output(grad_weight)
                                .add_const_input(self)
                                .add_const_input(weight)
                                .add_const_input(grad_output)
                                .build();
  check_dispatch_dtype("prelu_backward_cpu", dispatch_dtype(iter), kFloatingTypes);
  launch_rounded("aten::_prelu_kernel_backward", "prelu_backward", iter, {}, prelu_backward_body);
  return {grad_self, grad_weight};
}

}  // namespace kiln::torch_integration::compiled
