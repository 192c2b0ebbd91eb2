// Pointwise ops on the compiled path.
//
// A TensorIterator (built by the caller with ATen's own config for the op, so
// broadcasting, type promotion, output allocation and resizing, overlap checks
// and error messages are PyTorch's) gives the iteration space, already
// coalesced and ordered innermost-first. launch_pointwise turns it into a
// kernel signature and launch arguments, asks the kernel cache for the kernel
// (building its IR with `body` on a miss) and launches it.
//
// CPU scalar operands (Python numbers, 0-dim CPU tensors) become scalar launch
// arguments, so `x + 2` and `x + 3` share a kernel.
#pragma once

#include <ATen/TensorIterator.h>

#include <functional>
#include <string_view>
#include <vector>

#include "kiln/ir/builder.h"

namespace kiln::torch_integration::compiled {

// What a pointwise body sees while its kernel is built.
struct PointwiseContext {
  ir::Builder& builder;
  std::vector<ir::ValueId> inputs;    // each input's value, in its own compute dtype
  std::vector<ir::DType> input_dtypes;  // each input's dtype
  std::vector<ir::ValueId> scalars;   // the op's extra scalars (f64, i64 or bool)
  ir::DType common;                   // the iterator's common dtype (the output's when none)
  std::vector<ir::DType> output_dtypes;

  // Input `index` converted to the common dtype: rounded as the CPU rounds a
  // tensor operand, but a CPU scalar converted straight to the compute dtype,
  // as ATen's CPU and CUDA kernels use the scalar's original value.
  ir::ValueId promoted(int index);
  // As promoted(), but a CPU scalar is first rounded to a float16 or
  // bfloat16 common dtype (through float, as c10's conversion goes): ATen's
  // CPU add, sub, remainder, fmod, comparisons and xlogy read the scalar
  // converted to the tensor's dtype; only mul and the divisions keep its
  // original value.
  ir::ValueId rounded(int index);
  // Extra scalar `index` converted to `dtype`'s compute dtype.
  ir::ValueId scalar_as(int index, ir::DType dtype);
  ir::ValueId constant(double value) { return builder.constant(value, ir::compute_dtype(common)); }
  ir::ValueId unary(ir::OpCode op, ir::ValueId x) { return builder.unary(op, x); }
  ir::ValueId binary(ir::OpCode op, ir::ValueId a, ir::ValueId b) { return builder.binary(op, a, b); }

  std::vector<bool> input_is_scalar;
};

// Returns one value per output of the iterator.
using PointwiseBody = std::function<std::vector<ir::ValueId>(PointwiseContext&)>;

// Runs the op over `iter` (built, outputs allocated). `op_key` names the
// body's semantics in the kernel signature: two calls with the same key must
// pass bodies that build the same IR for the same dtypes. `op_name` (static)
// labels errors and op tracking.
void launch_pointwise(const char* op_name, std::string_view op_key, at::TensorIteratorBase& iter,
                      c10::ArrayRef<c10::Scalar> scalars, const PointwiseBody& body);

}  // namespace kiln::torch_integration::compiled
