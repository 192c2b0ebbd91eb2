// Factories: host-side argument checks and sizes as ATen's CPU
// implementations compute them, then one coordinate kernel each.
#include "kiln/aten/compiled/factory/factory_ops.h"

#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/RangeUtils.h>
#include <ATen/ops/empty.h>

#include <cmath>
#include <type_traits>

#include "kiln/aten/compiled/launch/coordinate_launch.h"
#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::DType;
using ir::OpCode;
using ir::ValueId;

// ---- arange ----

// The accumulate type ATen's CPU arange computes in.
DType arange_accumulate_dtype(DType output) {
  switch (output) {
    case DType::kFloat16:
    case DType::kBFloat16: return DType::kFloat32;
    case DType::kFloat32:
    case DType::kFloat64: return DType::kFloat64;
    default: return DType::kInt64;
  }
}

// The number of elements, with ATen's checks (compute_arange_size, which
// validates in double); `start` and `step` come back converted to the
// accumulate type, as ATen's kernel converts them (so an integer arange with
// step 0.1 repeats its start, as on the CPU).
int64_t arange_size(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step,
                    c10::ScalarType type, c10::Scalar& start_value, c10::Scalar& step_value) {
  int64_t size = 0;
  AT_DISPATCH_ALL_TYPES_AND2(c10::kHalf, c10::kBFloat16, type, "arange_cpu", [&] {
    using accumulate_t = at::acc_type<scalar_t, false>;
    size = at::native::compute_arange_size<scalar_t>(start, end, step);
    start_value = c10::Scalar(start.to<accumulate_t>());
    step_value = c10::Scalar(step.to<accumulate_t>());
  });
  return size;
}

// Resizes a 1-D result as ATen does, warning when a non-empty out= tensor
// had another number of elements.
void resize_to_count(at::Tensor& out, int64_t count) {
  int64_t numel = out.numel();
  if (numel == count) return;
  if (numel > 0) {
    TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(), " is ", numel,
               " which does not match the computed number of elements ", count,
               ". Note that this may occur as a result of rounding error. "
               "The out tensor will be resized to a tensor of shape (", count, ",).");
  }
  out.resize_({count});
}

// ---- linspace ----

// start, end and step as ATen's CPU kernel has them: start and end converted
// to the dtype (with overflow checks), step computed in double for integers
// and in the dtype itself otherwise (c10::Half arithmetic rounds each step).
c10::SmallVector<c10::Scalar, 5> linspace_scalars(const c10::Scalar& start, const c10::Scalar& end,
                                                  int64_t steps, c10::ScalarType type) {
  c10::SmallVector<c10::Scalar, 5> scalars;
  AT_DISPATCH_ALL_TYPES_AND2(c10::kHalf, c10::kBFloat16, type, "linspace_cpu", [&] {
    using step_t = std::conditional_t<std::is_integral_v<scalar_t>, double, scalar_t>;
    const scalar_t first = start.to<scalar_t>();
    const scalar_t last = end.to<scalar_t>();
    const step_t step = (static_cast<step_t>(last) - static_cast<step_t>(first)) / (steps - 1);
    scalars.push_back(static_cast<double>(first));
    scalars.push_back(static_cast<double>(last));
    scalars.push_back(static_cast<double>(step));
  });
  scalars.push_back(steps / 2);
  scalars.push_back(steps);
  return scalars;
}

// value(i) = i < halfway ? start + step * i : end - step * (steps - i - 1),
// in double for integers, in the dtype for floats; for the half types every
// operation rounds to the half type.
ValueId linspace_value(CoordinateContext& context) {
  ir::Builder& builder = context.builder;
  DType output = context.output_dtype;
  bool integral = !ir::is_floating(output);
  bool half = output == DType::kFloat16 || output == DType::kBFloat16;
  DType compute = integral ? DType::kFloat64 : ir::compute_dtype(output);
  auto round = [&](ValueId value) { return half ? builder.cast(value, output) : value; };
  auto as_compute = [&](ValueId value) { return round(builder.cast(value, compute)); };
  ValueId index = builder.linear_index();
  ValueId start = builder.cast(context.scalars[0], compute);
  ValueId end = builder.cast(context.scalars[1], compute);
  ValueId step = builder.cast(context.scalars[2], compute);
  ValueId halfway = context.scalars[3];
  ValueId steps = context.scalars[4];
  ValueId from_start = round(builder.binary(
      OpCode::kAdd, start, round(builder.binary(OpCode::kMultiply, step, as_compute(index)))));
  ValueId remaining = builder.binary(
      OpCode::kSubtract, builder.binary(OpCode::kSubtract, steps, index),
      builder.constant(1, DType::kInt64));
  ValueId from_end = round(builder.binary(
      OpCode::kSubtract, end, round(builder.binary(OpCode::kMultiply, step, as_compute(remaining)))));
  ValueId first_half = builder.binary(OpCode::kLess, index, halfway);
  ValueId value = builder.select(first_half, from_start, from_end);
  // Integers: the double truncates toward zero as the store converts it.
  return value;
}

// ---- tril, triu ----

enum class Triangle { kLower, kUpper };

ValueId triangle_value(CoordinateContext& context, Triangle triangle) {
  ir::Builder& builder = context.builder;
  ValueId column = context.coordinate(0);
  ValueId row = context.coordinate(1);
  ValueId offset = builder.binary(OpCode::kSubtract, column, row);
  ValueId keep = builder.binary(triangle == Triangle::kLower ? OpCode::kLessEqual
                                                             : OpCode::kGreaterEqual,
                                offset, context.scalars[0]);
  DType type = ir::compute_dtype(context.output_dtype);
  return builder.select(keep, context.inputs[0], builder.constant(0.0, type));
}

void check_matrix(const at::Tensor& self, const char* name) {
  TORCH_CHECK(self.dim() >= 2, name, ": input tensor must have at least 2 dimensions");
}

void run_triangle(const char* op_name, Triangle triangle, const at::Tensor& out,
                  const at::Tensor& self, int64_t diagonal) {
  c10::Scalar scalars[] = {diagonal};
  launch_with_coordinates(op_name, triangle == Triangle::kLower ? "tril" : "triu", out, {self},
                          scalars, 2, [triangle](CoordinateContext& context) {
                            return triangle_value(context, triangle);
                          });
}

at::Tensor triangle_new(const char* op_name, Triangle triangle, const at::Tensor& self,
                        int64_t diagonal) {
  check_matrix(self, triangle == Triangle::kLower ? "tril" : "triu");
  at::Tensor result = at::empty(self.sizes(), self.options());
  run_triangle(op_name, triangle, result, self, diagonal);
  return result;
}

void triangle_in_place(const char* op_name, Triangle triangle, at::Tensor& self,
                       int64_t diagonal) {
  check_matrix(self, triangle == Triangle::kLower ? "tril" : "triu");
  run_triangle(op_name, triangle, self, self, diagonal);
}

void triangle_out(const char* op_name, Triangle triangle, const at::Tensor& self,
                  int64_t diagonal, at::Tensor& out) {
  check_matrix(self, triangle == Triangle::kLower ? "tril" : "triu");
  resize_out_output(out, self.sizes(), {}, self.options());
  run_triangle(op_name, triangle, out, self, diagonal);
}

}  // namespace

bool fill_strided_covers(const at::Tensor& self) {
  return to_ir_dtype(self.scalar_type()).has_value();
}

void fill_strided(const at::Tensor& self, const c10::Scalar& value, const char* op_name) {
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .set_check_mem_overlap(false)  // a fill is idempotent
                                .check_all_same_dtype(false)
                                .resize_outputs(false)
                                .add_output(self)
                                .build();
  c10::Scalar scalars[] = {scalar_as(value, self.scalar_type())};
  launch_pointwise(op_name, "fill", iter, scalars,
                   [](PointwiseContext& context) -> std::vector<ValueId> {
    return {context.builder.cast(context.scalars[0], context.output_dtypes[0])};
  });
}

at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step,
                       at::Tensor& out) {
  c10::Scalar start_value, step_value;
  int64_t size = arange_size(start, end, step, out.scalar_type(), start_value, step_value);
  resize_to_count(out, size);
  c10::Scalar scalars[] = {start_value, step_value};
  // The CPU writes a contiguous temporary in order and copies: the value of
  // an element is that of its position in row-major order.
  launch_with_coordinates("aten::arange.start_out", "arange", out, {}, scalars, 0,
                          [](CoordinateContext& context) {
    ir::Builder& builder = context.builder;
    DType accumulate = arange_accumulate_dtype(context.output_dtype);
    ValueId index = builder.cast(builder.linear_index(), accumulate);
    ValueId first = builder.cast(context.scalars[0], accumulate);
    ValueId increment = builder.cast(context.scalars[1], accumulate);
    return builder.binary(OpCode::kAdd, first, builder.binary(OpCode::kMultiply, increment, index));
  });
  return out;
}

at::Tensor& linspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps,
                         at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  if (steps == 1) {
    out.fill_(start);
    return out;
  }
  c10::SmallVector<c10::Scalar, 5> scalars = linspace_scalars(start, end, steps, out.scalar_type());
  launch_with_coordinates("aten::linspace.out", "linspace", out, {}, scalars, 0, linspace_value);
  return out;
}

at::Tensor& logspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps,
                         double base, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  if (steps == 1) {  // as the CPU: one power in double
    out.fill_(std::pow(base, start.to<double>()));
    return out;
  }
  // As the CPU computes it: start, end and their difference in the dtype,
  // then everything in double (step, exponent and the power of the double
  // base), converted to the dtype once at the store.
  double first = 0, last = 0, span = 0;
  AT_DISPATCH_ALL_TYPES_AND2(c10::kHalf, c10::kBFloat16, out.scalar_type(), "logspace_cpu", [&] {
    const scalar_t typed_first = start.to<scalar_t>();
    const scalar_t typed_last = end.to<scalar_t>();
    first = static_cast<double>(typed_first);
    last = static_cast<double>(typed_last);
    span = static_cast<double>(static_cast<scalar_t>(typed_last - typed_first));
  });
  const c10::Scalar scalars[] = {first, last, span / static_cast<double>(steps - 1), steps / 2,
                                 steps, base};
  launch_with_coordinates("aten::logspace.out", "logspace", out, {}, scalars, 0,
                          [](CoordinateContext& context) {
    ir::Builder& builder = context.builder;
    auto as_double = [&](ValueId value) { return builder.cast(value, DType::kFloat64); };
    ValueId index = builder.linear_index();
    ValueId step = as_double(context.scalars[2]);
    ValueId remaining = builder.binary(
        OpCode::kSubtract, builder.binary(OpCode::kSubtract, context.scalars[4], index),
        builder.constant(1, DType::kInt64));
    ValueId from_start = builder.binary(OpCode::kAdd, as_double(context.scalars[0]),
                                        builder.binary(OpCode::kMultiply, step, as_double(index)));
    ValueId from_end = builder.binary(OpCode::kSubtract, as_double(context.scalars[1]),
                                      builder.binary(OpCode::kMultiply, step, as_double(remaining)));
    ValueId exponent = builder.select(builder.binary(OpCode::kLess, index, context.scalars[3]),
                                      from_start, from_end);
    return builder.binary(OpCode::kPower, as_double(context.scalars[5]), exponent);
  });
  return out;
}

at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  out.resize_({n, m});
  launch_with_coordinates("aten::eye.m_out", "eye", out, {}, {}, 2, [](CoordinateContext& context) {
    ir::Builder& builder = context.builder;
    DType type = ir::compute_dtype(context.output_dtype);
    ValueId diagonal = builder.binary(OpCode::kEqual, context.coordinate(0), context.coordinate(1));
    return builder.select(diagonal, builder.constant(1.0, type), builder.constant(0.0, type));
  });
  return out;
}

at::Tensor& eye_out(int64_t n, at::Tensor& out) { return eye_m_out(n, n, out); }

#define KILN_DEFINE_TRIANGLE(name, triangle)                                                 \
  at::Tensor name(const at::Tensor& self, int64_t diagonal) {                                \
    return triangle_new("aten::" #name, triangle, self, diagonal);                           \
  }                                                                                          \
  at::Tensor& name##_(at::Tensor& self, int64_t diagonal) {                                  \
    triangle_in_place("aten::" #name "_", triangle, self, diagonal);                         \
    return self;                                                                             \
  }                                                                                          \
  at::Tensor& name##_out(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {        \
    triangle_out("aten::" #name ".out", triangle, self, diagonal, out);                      \
    return out;                                                                              \
  }

KILN_DEFINE_TRIANGLE(tril, Triangle::kLower)
KILN_DEFINE_TRIANGLE(triu, Triangle::kUpper)

#undef KILN_DEFINE_TRIANGLE

}  // namespace kiln::torch_integration::compiled
