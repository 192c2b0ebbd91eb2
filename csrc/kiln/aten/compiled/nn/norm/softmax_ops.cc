#include "kiln/aten/compiled/nn/norm/softmax_ops.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_log_softmax_backward_data_meta.h>
#include <ATen/ops/_log_softmax_meta.h>
#include <ATen/ops/_softmax_backward_data_meta.h>
#include <ATen/ops/_softmax_meta.h>
#include <ATen/ops/empty.h>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/reduction.h"
#include "kiln/aten/compiled/launch/structured_run.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ReduceOp;

// Row statistics are kept in float32 (float64 for float64 tensors), the
// accumulate type of ATen's CPU kernels.
at::ScalarType accumulate_type(at::ScalarType type) {
  return type == at::kDouble ? at::kDouble : at::kFloat;
}

at::Tensor at_least_1d(const at::Tensor& tensor) {
  return tensor.dim() == 0 ? tensor.view({1}) : tensor;
}

void check_floating(const at::Tensor& tensor, const char* last_dim_kernel, const char* kernel,
                    bool last_dim) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(tensor.scalar_type()), "\"",
                              last_dim ? last_dim_kernel : kernel, "\" not implemented for '",
                              c10::toString(tensor.scalar_type()), "'");
}

// A tensor with `reference`'s sizes but 1 along `dim`, in the accumulate type.
at::Tensor row_buffer(const at::Tensor& reference, int64_t dim, at::ScalarType type) {
  c10::DimVector sizes(reference.sizes().begin(), reference.sizes().end());
  sizes[dim] = 1;
  return at::empty(sizes, reference.options().dtype(type));
}

// One output element from x - max, exp(x - max) (softmax only: the row
// kernel's buffered value) and the row's finished sum (log(sum) for
// log_softmax, 1 / sum for softmax), and that finishing: both paths'
// arithmetic.
ir::ValueId softmax_element(ir::Builder& builder, bool log, ir::ValueId shifted, ir::ValueId exponential,
                            ir::ValueId finished_sum) {
  if (log) return builder.binary(OpCode::kSubtract, shifted, finished_sum);
  return builder.binary(OpCode::kMultiply, exponential, finished_sum);
}
ir::ValueId finish_sum(ir::Builder& builder, bool log, ir::ValueId sum) {
  return builder.unary(log ? OpCode::kLog : OpCode::kReciprocal, sum);
}

// One grad_input element of a softmax backward from the row's sum (see
// softmax_backward_into).
ir::ValueId backward_element(ir::Builder& builder, bool log, ir::ValueId grad_value, ir::ValueId output_value,
                             ir::ValueId sum) {
  if (log) {
    ir::ValueId scaled = builder.binary(OpCode::kMultiply, builder.unary(OpCode::kExp, output_value), sum);
    return builder.binary(OpCode::kSubtract, grad_value, scaled);
  }
  return builder.binary(OpCode::kMultiply, output_value, builder.binary(OpCode::kSubtract, grad_value, sum));
}

// softmax or log_softmax of `x` along `dim` into `y` as one row kernel: the
// maximum and the sum of exponentials are its two stages, and the same
// arithmetic as the three-kernel path below gives the same values.
void softmax_rows(const char* op_name, bool log, const at::Tensor& x, int64_t dim, ir::DType compute,
                  const at::Tensor& y) {
  const int64_t reduced[] = {dim};
  launch_row_reduction(
      op_name, log ? "log_softmax_row" : "softmax_row", {x}, {y}, reduced, {},
      [log, compute](ir::Builder& builder, const std::vector<ir::ValueId>& loads,
                     const std::vector<ir::ValueId>&) -> std::vector<ir::ValueId> {
        ir::ValueId value = builder.cast(loads[0], compute);
        ir::ValueId max = builder.stage_result(builder.reduce_stage(ReduceOp::kMax, value));
        ir::ValueId shifted = builder.binary(OpCode::kSubtract, value, max);
        ir::ValueId exponential = builder.unary(OpCode::kExp, shifted);
        ir::ValueId sum = builder.stage_result(builder.reduce_stage(ReduceOp::kSum, exponential));
        return {softmax_element(builder, log, shifted, exponential, finish_sum(builder, log, sum))};
      },
      /*fixed_shape=*/false);
}

void softmax_into(const char* op_name, bool log, const at::Tensor& input, int64_t dim,
                  bool half_to_float, const at::Tensor& output) {
  // CUDA's rule: only float16 widens to float32.
  TORCH_CHECK(!half_to_float || input.scalar_type() == at::kHalf,
              "conversion is supported for Half type only");
  // The CPU returns an empty input's (empty) result before its kernel checks
  // the dtype (an empty int64 softmax succeeds; found by tests/python/op_fuzz.py).
  if (input.numel() == 0) return;
  const bool last_dim = input.dim() == 0 || c10::maybe_wrap_dim(dim, input.dim()) == input.dim() - 1;
  if (log) check_floating(input, "log_softmax_lastdim_kernel_impl", "log_softmax_kernel_impl", last_dim);
  else check_floating(input, "softmax_lastdim_kernel_impl", "softmax_kernel_impl", last_dim);
  const at::Tensor x = at_least_1d(input);
  const at::Tensor y = at_least_1d(output);
  dim = c10::maybe_wrap_dim(dim, x.dim());
  const at::ScalarType accumulate = accumulate_type(x.scalar_type());
  const ir::DType compute = require_ir_dtype(accumulate, op_name);
  if (rows_suit_row_kernel({x}, {dim})) {
    softmax_rows(op_name, log, x, dim, compute, y);
    return;
  }
  const int64_t reduced[] = {dim};

  at::Tensor max = row_buffer(x, dim, accumulate);
  ReductionSpec max_spec;
  max_spec.op = ReduceOp::kMax;
  max_spec.element = [compute](ReductionContext& context) {
    return context.builder.cast(context.inputs[0], compute);
  };
  launch_reduction(op_name, "softmax_max", {x}, {max}, reduced, {}, max_spec);
  const at::Tensor max_full = max.expand(x.sizes());

  // sum(exp(x - max)), stored as log(sum) for log_softmax and 1 / sum for
  // softmax: what each output element needs.
  at::Tensor sum = row_buffer(x, dim, accumulate);
  ReductionSpec sum_spec;
  sum_spec.op = ReduceOp::kSum;
  sum_spec.element = [compute](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ir::ValueId shifted =
        builder.binary(OpCode::kSubtract, builder.cast(context.inputs[0], compute), context.inputs[1]);
    return builder.unary(OpCode::kExp, shifted);
  };
  sum_spec.epilogue = [log](ReductionContext& context) -> std::vector<ir::ValueId> {
    return {finish_sum(context.builder, log, context.builder.accumulator())};
  };
  launch_reduction(op_name, log ? "log_softmax_sum" : "softmax_sum", {x, max_full}, {sum},
                   reduced, {}, sum_spec);

  launch_elementwise(
      op_name, log ? "log_softmax" : "softmax", {x, max_full, sum.expand(x.sizes())}, {y}, {},
      [log, compute](ElementwiseContext& context) -> std::vector<ir::ValueId> {
        ir::Builder& builder = context.builder;
        ir::ValueId shifted = builder.binary(OpCode::kSubtract, builder.cast(context.inputs[0], compute),
                                             context.inputs[1]);
        ir::ValueId exponential = log ? ir::kNoValue : builder.unary(OpCode::kExp, shifted);
        return {softmax_element(builder, log, shifted, exponential, context.inputs[2])};
      });
}

// softmax: grad_input = output * (grad - sum(grad * output));
// log_softmax: grad_input = grad - exp(output) * sum(grad).
// As one row kernel where rows_suit_row_kernel (reduction.h) says so: the sum
// is its stage.
void softmax_backward_rows(const char* op_name, bool log, const at::Tensor& grad, const at::Tensor& output,
                           int64_t dim, ir::DType compute, const at::Tensor& grad_input) {
  const int64_t reduced[] = {dim};
  launch_row_reduction(
      op_name, log ? "log_softmax_backward_row" : "softmax_backward_row", {grad, output}, {grad_input}, reduced, {},
      [log, compute](ir::Builder& builder, const std::vector<ir::ValueId>& loads,
                     const std::vector<ir::ValueId>&) -> std::vector<ir::ValueId> {
        ir::ValueId grad_value = builder.cast(loads[0], compute);
        ir::ValueId output_value = builder.cast(loads[1], compute);
        ir::ValueId summand = log ? grad_value : builder.binary(OpCode::kMultiply, grad_value, output_value);
        ir::ValueId sum = builder.stage_result(builder.reduce_stage(ReduceOp::kSum, summand));
        return {backward_element(builder, log, grad_value, output_value, sum)};
      },
      /*fixed_shape=*/false);
}

void softmax_backward_into(const char* op_name, bool log, const at::Tensor& grad,
                           const at::Tensor& output, int64_t dim, const at::Tensor& grad_input) {
  check_same_device({grad, output, grad_input});
  TORCH_CHECK(grad.sizes().equals(output.sizes()), "Expected tensor for argument #1 'grad' to have "
              "same size as tensor for argument #2 'output'; but ", grad.sizes(), " does not equal ",
              output.sizes());
  const bool last_dim = grad.dim() == 0 || c10::maybe_wrap_dim(dim, grad.dim()) == grad.dim() - 1;
  const char* kernel = log ? "log_softmax_backward" : "softmax_backward";
  check_floating(grad, kernel, kernel, last_dim);
  check_floating(output, kernel, kernel, last_dim);
  if (output.numel() == 0) return;
  const at::Tensor g = at_least_1d(grad);
  const at::Tensor o = at_least_1d(output);
  const at::Tensor result = at_least_1d(grad_input);
  dim = c10::maybe_wrap_dim(dim, g.dim());
  const bool wide = g.scalar_type() == at::kDouble || o.scalar_type() == at::kDouble;
  const at::ScalarType accumulate = wide ? at::kDouble : at::kFloat;
  const ir::DType compute = wide ? ir::DType::kFloat64 : ir::DType::kFloat32;
  if (rows_suit_row_kernel({g, o}, {dim})) {
    softmax_backward_rows(op_name, log, g, o, dim, compute, result);
    return;
  }
  const int64_t reduced[] = {dim};

  at::Tensor sum = row_buffer(g, dim, accumulate);
  ReductionSpec spec;
  spec.op = ReduceOp::kSum;
  spec.element = [log, compute](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ir::ValueId grad_value = builder.cast(context.inputs[0], compute);
    if (log) return grad_value;
    return builder.binary(OpCode::kMultiply, grad_value, builder.cast(context.inputs[1], compute));
  };
  launch_reduction(op_name, log ? "log_softmax_backward_sum" : "softmax_backward_sum", {g, o}, {sum},
                   reduced, {}, spec);

  launch_elementwise(
      op_name, log ? "log_softmax_backward" : "softmax_backward", {g, o, sum.expand(g.sizes())},
      {result}, {}, [log, compute](ElementwiseContext& context) -> std::vector<ir::ValueId> {
        ir::Builder& builder = context.builder;
        ir::ValueId grad_value = builder.cast(context.inputs[0], compute);
        ir::ValueId output_value = builder.cast(context.inputs[1], compute);
        return {backward_element(builder, log, grad_value, output_value, context.inputs[2])};
      });
}

}  // namespace

at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return structured<at::meta::structured__softmax>(nullptr, [&](const at::Tensor& result) {
    softmax_into("aten::_softmax", false, self, dim, half_to_float, result);
  }, self, dim, half_to_float);
}

at::Tensor& softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  structured<at::meta::structured__softmax>(&out, [&](const at::Tensor& result) {
    softmax_into("aten::_softmax.out", false, self, dim, half_to_float, result);
  }, self, dim, half_to_float);
  return out;
}

at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return structured<at::meta::structured__log_softmax>(nullptr, [&](const at::Tensor& result) {
    softmax_into("aten::_log_softmax", true, self, dim, half_to_float, result);
  }, self, dim, half_to_float);
}

at::Tensor& log_softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  structured<at::meta::structured__log_softmax>(&out, [&](const at::Tensor& result) {
    softmax_into("aten::_log_softmax.out", true, self, dim, half_to_float, result);
  }, self, dim, half_to_float);
  return out;
}

at::Tensor softmax_backward_data(const at::Tensor& grad_output, const at::Tensor& output,
                                 int64_t dim, at::ScalarType input_dtype) {
  return structured<at::meta::structured__softmax_backward_data>(nullptr, [&](const at::Tensor& result) {
    softmax_backward_into("aten::_softmax_backward_data", false, grad_output, output, dim, result);
  }, grad_output, output, dim, input_dtype);
}

at::Tensor& softmax_backward_data_out(const at::Tensor& grad_output, const at::Tensor& output,
                                      int64_t dim, at::ScalarType input_dtype,
                                      at::Tensor& grad_input) {
  structured<at::meta::structured__softmax_backward_data>(&grad_input, [&](const at::Tensor& result) {
    softmax_backward_into("aten::_softmax_backward_data.out", false, grad_output, output, dim, result);
  }, grad_output, output, dim, input_dtype);
  return grad_input;
}

at::Tensor log_softmax_backward_data(const at::Tensor& grad_output, const at::Tensor& output,
                                     int64_t dim, at::ScalarType input_dtype) {
  return structured<at::meta::structured__log_softmax_backward_data>(nullptr, [&](const at::Tensor& result) {
    softmax_backward_into("aten::_log_softmax_backward_data", true, grad_output, output, dim, result);
  }, grad_output, output, dim, input_dtype);
}

at::Tensor& log_softmax_backward_data_out(const at::Tensor& grad_output, const at::Tensor& output,
                                          int64_t dim, at::ScalarType input_dtype,
                                          at::Tensor& grad_input) {
  structured<at::meta::structured__log_softmax_backward_data>(&grad_input, [&](const at::Tensor& result) {
    softmax_backward_into("aten::_log_softmax_backward_data.out", true, grad_output, output, dim,
                          result);
  }, grad_output, output, dim, input_dtype);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
