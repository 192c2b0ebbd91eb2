#include "kiln/aten/compiled/vector_reduction_ops.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/all.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>

#include "kiln/aten/compiled/elementwise.h"
#include "kiln/aten/compiled/pointwise_support.h"
#include "kiln/aten/compiled/reduction.h"

namespace kiln::torch_integration::compiled {
namespace {

void check_dot_operands(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(),
              "D and ", other.dim(), "D tensors");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(),
              "dot : expected both vectors to have same dtype, but found ", self.scalar_type(),
              " and ", other.scalar_type());
  TORCH_CHECK(self.numel() == other.numel(), "inconsistent tensor size, expected tensor [",
              self.numel(), "] and src [", other.numel(),
              "] to have the same number of elements, but got ", self.numel(), " and ",
              other.numel(), " elements respectively");
  check_dispatch_dtype("dot", self.scalar_type(), kNumericTypes);
}

// sum(self * other) into the 0-dim `out`.
void dot_into(const char* op_name, const at::Tensor& self, const at::Tensor& other,
              const at::Tensor& out) {
  const int64_t dims[] = {0};
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kSum;
  spec.element = [](ReductionContext& context) {
    return context.builder.binary(ir::OpCode::kMultiply, context.inputs[0], context.inputs[1]);
  };
  const at::Tensor inputs[] = {self, other};
  launch_reduction(op_name, "dot", inputs, {keepdim_view(out, 1, dims)}, dims, {}, spec);
}

}  // namespace

bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  if (!self.is_same_size(other)) return false;
  // eq promotes the operands to their common dtype, as the CPU's equal does;
  // NaN is unequal to itself.
  return at::all(at::eq(self, other)).item<bool>();
}

at::Tensor dot(const at::Tensor& self, const at::Tensor& other) {
  check_same_device({self, other});
  check_dot_operands(self, other);
  at::Tensor out = at::empty({}, self.options());
  dot_into("aten::dot", self, other, out);
  return out;
}

at::Tensor& dot_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  check_same_device({self, other, out});
  check_dot_operands(self, other);
  at::native::resize_output(out, {});
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "result dtype ", out.scalar_type(),
              " does not match input dtype ", self.scalar_type());
  dot_into("aten::dot.out", self, other, out);
  return out;
}

}  // namespace kiln::torch_integration::compiled
