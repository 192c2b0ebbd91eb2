#include "kiln/aten/compiled/reduction.h"

#include <ATen/ops/as_strided.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <numeric>

#include "kiln/aten/compiled/ir_dtype.h"
#include "kiln/aten/compiled/kernel_launch.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

constexpr int kMaxDims = 64;

// A reduction with fewer outputs than this and at least kSplitElements
// elements is split in two stages, so all threads take part.
constexpr int64_t kSplitOutputs = 4;
constexpr int64_t kSplitElements = int64_t{1} << 18;
constexpr int64_t kSplitPieces = 16;

// Inserts a dim of size `size` and stride `stride` before `dim`.
at::Tensor with_dim(const at::Tensor& tensor, int64_t dim, int64_t size, int64_t stride) {
  c10::DimVector sizes(tensor.sizes().begin(), tensor.sizes().end());
  c10::DimVector strides(tensor.strides().begin(), tensor.strides().end());
  sizes.insert(sizes.begin() + dim, size);
  strides.insert(strides.begin() + dim, stride);
  return tensor.as_strided(sizes, strides);
}

// The dtype a reduction accumulates in: that of its element value, found by
// building the element expression alone. Stage 1 of a split stores its
// partials in it, so neither `any` into uint8 nor a float64 accumulation into
// a float32 output loses anything between the stages.
ir::DType accumulator_dtype(const char* op_name, const ReductionSpec& spec,
                            c10::ArrayRef<at::Tensor> inputs, c10::ArrayRef<at::Tensor> outputs,
                            c10::ArrayRef<c10::Scalar> scalars) {
  ir::Builder builder("accumulator_probe", ir::KernelKind::kReduction, 1);
  ReductionContext context{builder, {}, {}, {}, {}};
  for (const at::Tensor& input : inputs) {
    ir::DType dtype = require_ir_dtype(input.scalar_type(), op_name);
    context.inputs.push_back(builder.load(builder.add_input(dtype, ir::Layout::kContiguous)));
    context.input_dtypes.push_back(dtype);
  }
  for (const c10::Scalar& value : scalars) {
    context.scalars.push_back(builder.scalar(builder.add_scalar(scalar_ir_dtype(value, op_name))));
  }
  for (const at::Tensor& output : outputs) {
    context.output_dtypes.push_back(require_ir_dtype(output.scalar_type(), op_name));
  }
  return builder.dtype_of(spec.element(context));
}

// Two-stage plan for a large reduction into few outputs: split reduced dim
// `dim` (size n) into (pieces, n / pieces), reduce the second part into a
// partial tensor with `pieces` entries per output, then reduce the pieces.
// Returns false when the reduction is not worth or not able to split.
bool reduce_in_two_stages(const char* op_name, std::string_view op_key,
                          c10::ArrayRef<at::Tensor> inputs, c10::ArrayRef<at::Tensor> outputs,
                          c10::IntArrayRef reduced, c10::ArrayRef<c10::Scalar> scalars,
                          const ReductionSpec& spec) {
  if (spec.op == ir::ReduceOp::kArgMax || spec.op == ir::ReduceOp::kArgMin) return false;
  if (outputs.size() != 1 || outputs[0].numel() >= kSplitOutputs) return false;
  const at::Tensor& reference = inputs[0];
  if (reference.numel() < kSplitElements) return false;
  int64_t dim = -1;
  for (int64_t candidate : reduced) {
    int64_t size = reference.size(candidate);
    if (size % kSplitPieces == 0 && (dim < 0 || size > reference.size(dim))) dim = candidate;
  }
  if (dim < 0) return false;
  const int64_t part = reference.size(dim) / kSplitPieces;
  // Stage 1: inputs viewed as [..., pieces, part, ...]; `part` and the other
  // reduced dims (shifted past the new dim) are reduced, `pieces` is kept.
  std::vector<at::Tensor> split_inputs;
  for (const at::Tensor& input : inputs) {
    at::Tensor narrowed = input.as_strided(
        [&] { c10::DimVector sizes(input.sizes().begin(), input.sizes().end()); sizes[dim] = part; return sizes; }(),
        input.strides());
    split_inputs.push_back(with_dim(narrowed, dim, kSplitPieces, input.stride(dim) * part));
  }
  c10::DimVector stage_one_reduced;
  for (int64_t other : reduced) stage_one_reduced.push_back(other < dim ? other : other + 1);
  at::ScalarType partial_type =
      to_scalar_type(accumulator_dtype(op_name, spec, inputs, outputs, scalars));
  at::Tensor partial = at::empty({kSplitPieces}, outputs[0].options().dtype(partial_type));
  c10::DimVector partial_sizes(split_inputs[0].dim(), 1), partial_strides(split_inputs[0].dim(), 0);
  partial_sizes[dim] = kSplitPieces;
  partial_strides[dim] = 1;
  at::Tensor partial_view = partial.as_strided(partial_sizes, partial_strides);
  ReductionSpec first;
  first.op = spec.op;
  first.element = spec.element;
  launch_reduction(op_name, std::string(op_key) + "/pieces", split_inputs, {partial_view},
                   stage_one_reduced, scalars, first);
  // Stage 2: the pieces, folded with the same op, then the op's epilogue.
  ReductionSpec second;
  second.op = spec.op;
  second.element = [](ReductionContext& context) { return context.inputs[0]; };
  second.epilogue = spec.epilogue;
  at::Tensor output = with_dim(outputs[0], dim + 1, 1, 0);
  at::Tensor pieces = partial.as_strided(
      [&] { c10::DimVector sizes(output.dim(), 1); sizes[dim] = kSplitPieces; return sizes; }(),
      [&] { c10::DimVector strides(output.dim(), 0); strides[dim] = 1; return strides; }());
  c10::DimVector stage_two_reduced(stage_one_reduced.begin(), stage_one_reduced.end());
  stage_two_reduced.push_back(dim);
  launch_reduction(op_name, std::string(op_key) + "/combine", {pieces}, {output}, stage_two_reduced,
                   scalars, second);
  return true;
}

}  // namespace

at::Tensor keepdim_view(const at::Tensor& output, int64_t rank, c10::IntArrayRef reduced) {
  if (output.dim() == rank) return output;
  std::vector<bool> is_reduced(rank, false);
  for (int64_t dim : reduced) is_reduced[dim] = true;
  std::vector<int64_t> sizes, strides;
  int64_t source = 0;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (is_reduced[dim]) {
      sizes.push_back(1);
      strides.push_back(0);
    } else {
      sizes.push_back(output.size(source));
      strides.push_back(output.stride(source));
      ++source;
    }
  }
  return output.as_strided(sizes, strides);
}

void launch_reduction(const char* op_name, std::string_view op_key,
                      c10::ArrayRef<at::Tensor> inputs, c10::ArrayRef<at::Tensor> outputs,
                      c10::IntArrayRef reduced, c10::ArrayRef<c10::Scalar> scalars,
                      const ReductionSpec& spec) {
  if (reduce_in_two_stages(op_name, op_key, inputs, outputs, reduced, scalars, spec)) return;
  record_static_op(op_name, OpPath::kCompiled);
  const int input_count = static_cast<int>(inputs.size());
  const int operands = input_count + static_cast<int>(outputs.size());
  TORCH_CHECK(operands <= ir::kMaxOperands, op_name, ": too many operands for one kernel");
  const at::Tensor& reference = inputs[0];
  const int64_t rank = reference.dim();
  TORCH_INTERNAL_ASSERT(rank <= kMaxDims);
  std::vector<bool> is_reduced(rank, false);
  for (int64_t dim : reduced) is_reduced[dim] = true;

  auto operand = [&](int index) -> const at::Tensor& {
    return index < input_count ? inputs[index] : outputs[index - input_count];
  };
  for (int index = 0; index < operands; ++index) {
    TORCH_INTERNAL_ASSERT(operand(index).dim() == rank, op_name, ": operand ranks differ");
  }

  std::vector<KernelDim> kept, reduced_dims;
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    if (reference.size(dim) == 1) continue;
    KernelDim entry{reference.size(dim), {}};
    for (int index = 0; index < operands; ++index) {
      bool output = index >= input_count;
      entry.strides[index] = (output && is_reduced[dim]) ? 0 : operand(index).stride(dim);
    }
    (is_reduced[dim] ? reduced_dims : kept).push_back(entry);
  }
  // Fastest first: outputs decide the order of kept dims, input 0 that of
  // reduced dims (unless the index must follow the logical order).
  auto by_stride = [](int operand_index) {
    return [operand_index](const KernelDim& a, const KernelDim& b) {
      return std::abs(a.strides[operand_index]) < std::abs(b.strides[operand_index]);
    };
  };
  std::stable_sort(kept.begin(), kept.end(), by_stride(input_count));
  if (!spec.logical_order) std::stable_sort(reduced_dims.begin(), reduced_dims.end(), by_stride(0));
  coalesce_dims(kept, operands);
  coalesce_dims(reduced_dims, operands);
  if (reduced_dims.empty()) reduced_dims.push_back(KernelDim{1, {}});
  const int kept_rank = static_cast<int>(kept.size());
  const int kernel_rank = kept_rank + static_cast<int>(reduced_dims.size());
  TORCH_CHECK(kernel_rank <= ir::kMaxRank, op_name, ": the kiln device supports at most ",
              ir::kMaxRank, " dims after merging, got ", kernel_rank);
  bool inner = kept.empty() ||
               std::abs(reduced_dims[0].strides[0]) <= std::abs(kept[0].strides[0]);
  const KernelDim& vector_dim = inner ? reduced_dims[0] : kept[0];

  LaunchArgs args{};  // unused operands read as null (foreach_ops.cc replays captures)
  int64_t positions = 1, cost = 1;
  for (int dim = 0; dim < kernel_rank; ++dim) {
    const KernelDim& entry = dim < kept_rank ? kept[dim] : reduced_dims[dim - kept_rank];
    args.sizes[dim] = entry.size;
    for (int index = 0; index < operands; ++index) args.strides[index][dim] = entry.strides[index];
    (dim < kept_rank ? positions : cost) *= entry.size;
  }

  Signature signature(op_key);
  signature.append('|');
  std::vector<ir::DType> dtypes;
  std::vector<ir::Layout> layouts;
  size_t bytes = 0;
  for (int index = 0; index < operands; ++index) {
    const at::Tensor& tensor = operand(index);
    ir::DType dtype = require_ir_dtype(tensor.scalar_type(), op_name);
    ir::Layout layout = layout_class(vector_dim.strides[index], vector_dim.size);
    dtypes.push_back(dtype);
    layouts.push_back(layout);
    args.data[index] = kernel_data(tensor, op_name);
    bytes += static_cast<size_t>(tensor.numel()) * tensor.element_size();
    signature.append(ir::dtype_name(dtype)).append(static_cast<char>(layout));
    signature.append(index + 1 == input_count ? '>' : ',');
  }
  signature.append("|k").append_number(kept_rank).append('r').append_number(kernel_rank - kept_rank);
  signature.append(inner ? 'i' : 'o').append('|');
  std::vector<ir::DType> scalar_dtypes;
  int slot = 0;
  for (const c10::Scalar& value : scalars) {
    ir::DType dtype = scalar_ir_dtype(value, op_name);
    if (dtype == ir::DType::kFloat64) args.scalars[slot].real = value.toDouble();
    else args.scalars[slot].integer = value.toLong();
    ++slot;
    scalar_dtypes.push_back(dtype);
    signature.append(scalar_kind_char(dtype));
  }

  ir::FixedShape fixed;
  if (spec.fixed_shape) fixed = fix_shape(signature, args, kernel_rank, operands);

  KernelEntry entry = kernel_for(signature.view(), op_name, [&]() {
    ir::Builder builder(std::string(op_key), ir::KernelKind::kReduction, kernel_rank);
    ReductionContext context{builder, {}, {}, {}, {}};
    for (int index = 0; index < input_count; ++index) {
      context.inputs.push_back(builder.load(builder.add_input(dtypes[index], layouts[index])));
      context.input_dtypes.push_back(dtypes[index]);
    }
    for (ir::DType dtype : scalar_dtypes) context.scalars.push_back(builder.scalar(builder.add_scalar(dtype)));
    std::vector<int> output_indices;
    for (int index = input_count; index < operands; ++index) {
      output_indices.push_back(builder.add_output(dtypes[index], layouts[index]));
      context.output_dtypes.push_back(dtypes[index]);
    }
    builder.reduce(spec.op, spec.element(context), kept_rank, inner);
    std::vector<ir::ValueId> results;
    if (spec.epilogue) {
      results = spec.epilogue(context);
    } else {
      results.push_back(builder.accumulator());
    }
    TORCH_INTERNAL_ASSERT(results.size() == output_indices.size(), op_name,
                          ": epilogue returned the wrong number of values");
    for (size_t output = 0; output < results.size(); ++output) {
      builder.store(output_indices[output], results[output]);
    }
    ir::Kernel kernel = builder.finish();
    kernel.fixed_shape = fixed;
    return kernel;
  });
  LaunchShape shape;
  shape.positions = positions;
  shape.cost_per_position = cost;
  shape.bytes = bytes;
  launch_kernel_lazily(stream_of(outputs[0]), op_name, entry, args, shape, [&]() {
    KeepAlive keep_alive;
    for (int index = 0; index < operands; ++index) keep_alive.push_back(operand(index));
    return keep_alive;
  });
}

}  // namespace kiln::torch_integration::compiled
