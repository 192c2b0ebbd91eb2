// Reductions on the compiled path.
//
// The caller gives the inputs (all of one shape: expand() broadcast operands),
// the outputs as views with that shape's rank and size 1 in every reduced dim
// (keepdim views), and the reduced dims. launch_reduction orders and merges
// the dims (kept dims first, each group fastest-first), picks a row reduction
// (the input's fastest dim is reduced: vectorised across lanes) or a column
// reduction (a kept dim is fastest: vectorised across neighbouring outputs),
// and builds, caches and launches the kernel.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string_view>
#include <vector>

#include "kiln/ir/builder.h"

namespace kiln::torch_integration::compiled {

struct ReductionContext {
  ir::Builder& builder;
  std::vector<ir::ValueId> inputs;      // per-element values, each in its compute dtype
  std::vector<ir::DType> input_dtypes;
  std::vector<ir::ValueId> scalars;     // the op's scalars (f64, i64 or bool)
  std::vector<ir::DType> output_dtypes;
};

struct ReductionSpec {
  ir::ReduceOp op = ir::ReduceOp::kSum;
  // The value folded for each element (reads context.inputs and scalars).
  std::function<ir::ValueId(ReductionContext&)> element;
  // One value per output, from builder.accumulator() (and accumulator_index()
  // for argmax/argmin) and scalars. Null: store the accumulator.
  std::function<std::vector<ir::ValueId>(ReductionContext&)> epilogue;
  // argmax/argmin: order the reduced dims as the tensor's logical dims, so the
  // index is the row-major position in the reduced dims.
  bool logical_order = false;
  // Specialise the kernel to this launch's sizes and strides (ir::FixedShape),
  // as ElementwiseOptions::fixed_shape: for compiled programs.
  bool fixed_shape = false;
};

// `reduced` lists the reduced dims (non-negative, of inputs[0]). `op_key`
// names the spec's semantics in the kernel signature; `op_name` (static)
// labels errors and op tracking.
void launch_reduction(const char* op_name, std::string_view op_key,
                      c10::ArrayRef<at::Tensor> inputs, c10::ArrayRef<at::Tensor> outputs,
                      c10::IntArrayRef reduced, c10::ArrayRef<c10::Scalar> scalars,
                      const ReductionSpec& spec);

// Row kernels (ir/kernel.h, KernelKind::kRow), for the graph compiler's fused
// softmax and layer norm kernels and the eager softmax, log_softmax and layer
// norm: each row (the reduced dims) folded in several stages, values stored
// per row and per element. The inputs and the per-element outputs have one
// shape (the inputs expanded to it); the per-row outputs are expanded to it
// too (stride 0 along the row). `body` builds the kernel's values into a kRow
// builder with the inputs and outputs added, from one load per input, adding
// the stages with Builder::reduce_stage, and returns one value per output;
// `scalars` become launch scalars, read through the values it is given.
// With `fixed_shape` the kernel is specialised to the launch's sizes and
// strides (ir::FixedShape); without, one kernel serves every shape of the
// launch's ranks and layouts, as eager ops need, and checks per row whether
// the row fits its buffers.
using RowKernelBody = std::function<std::vector<ir::ValueId>(
    ir::Builder& builder, const std::vector<ir::ValueId>& loads, const std::vector<ir::ValueId>& scalars)>;
void launch_row_reduction(const char* op_name, std::string_view op_key, c10::ArrayRef<at::Tensor> inputs,
                          c10::ArrayRef<at::Tensor> outputs, c10::IntArrayRef reduced,
                          c10::ArrayRef<c10::Scalar> scalars, const RowKernelBody& body, bool fixed_shape);

// Whether the eager ops' rows along `row_dims` (ascending) run as one row
// kernel: in every tensor of `tensors` (all of one shape) each row is one run
// of contiguous memory, and the rows suit a row kernel (row_kernel_policy.h).
// Otherwise the ops use plain reductions, which also suit columns and split
// few long rows over threads.
bool rows_suit_row_kernel(c10::ArrayRef<at::Tensor> tensors, c10::IntArrayRef row_dims);

// The keepdim view of `output` for a reduction of a tensor of rank `rank` over
// `reduced` (output has the reduced dims removed when keepdim was false).
at::Tensor keepdim_view(const at::Tensor& output, int64_t rank, c10::IntArrayRef reduced);

}  // namespace kiln::torch_integration::compiled
