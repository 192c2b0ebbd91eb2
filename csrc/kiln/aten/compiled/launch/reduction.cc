#include "kiln/aten/compiled/launch/reduction.h"

#include <ATen/ops/as_strided.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <numeric>

#include "kiln/aten/adaptive/adaptive_eager.h"
#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/compiler/row_kernel_policy.h"

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

// The launch layout of a reduction or row kernel: its dims in `args`, kept
// dims first, each group fastest first and merged; and per operand its
// dtype, its layout class along the vectorised dim and its data pointer.
struct ReductionLayout {
  LaunchArgs args{};  // unused operands read as null (foreach_ops.cc replays captures)
  int kept_rank = 0;
  int rank = 0;
  bool inner = true;  // the vectorised dim is the first reduced one
  int64_t positions = 1;  // kept elements
  int64_t cost = 1;       // reduced elements
  size_t bytes = 0;
  std::vector<ir::DType> dtypes;
  std::vector<ir::Layout> layouts;
};

// Lays out `operands` (the inputs, then the outputs, all of one rank) over
// `reduced` dims. An operand of size 1 in a dim steps by 0 through it (a
// reduction's keepdim outputs, a row kernel's per-row outputs). The outputs
// order the kept dims, input 0 the reduced ones unless `logical_order`; a row
// kernel (`row`) always vectorises its first reduced dim. Appends the
// operands' dtypes and layouts and the ranks to `signature`.
ReductionLayout lay_out_reduction(const char* op_name, const std::vector<at::Tensor>& operands, int input_count,
                                  c10::IntArrayRef reduced, bool logical_order, bool row, Signature& signature) {
  const int count = static_cast<int>(operands.size());
  TORCH_CHECK(count <= ir::kMaxOperands, op_name, ": too many operands for one kernel");
  const at::Tensor& reference = operands[0];
  const int64_t rank = reference.dim();
  TORCH_INTERNAL_ASSERT(rank <= kMaxDims);
  for (const at::Tensor& operand : operands) {
    TORCH_INTERNAL_ASSERT(operand.dim() == rank, op_name, ": operand ranks differ");
  }
  std::vector<bool> is_reduced(rank, false);
  for (int64_t dim : reduced) is_reduced[dim] = true;
  std::vector<KernelDim> kept, reduced_dims;
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    if (reference.size(dim) == 1) continue;
    KernelDim entry{reference.size(dim), {}};
    for (int index = 0; index < count; ++index) {
      const at::Tensor& operand = operands[index];
      entry.strides[index] = operand.size(dim) == 1 ? 0 : operand.stride(dim);
    }
    (is_reduced[dim] ? reduced_dims : kept).push_back(entry);
  }
  auto by_stride = [](int operand_index) {
    return [operand_index](const KernelDim& a, const KernelDim& b) {
      return std::abs(a.strides[operand_index]) < std::abs(b.strides[operand_index]);
    };
  };
  std::stable_sort(kept.begin(), kept.end(), by_stride(input_count));
  if (!logical_order) std::stable_sort(reduced_dims.begin(), reduced_dims.end(), by_stride(0));
  coalesce_dims(kept, count);
  coalesce_dims(reduced_dims, count);
  if (reduced_dims.empty()) reduced_dims.push_back(KernelDim{1, {}});
  ReductionLayout layout;
  layout.kept_rank = static_cast<int>(kept.size());
  layout.rank = layout.kept_rank + static_cast<int>(reduced_dims.size());
  TORCH_CHECK(layout.rank <= ir::kMaxRank, op_name, ": the kiln device supports at most ", ir::kMaxRank,
              " dims after merging, got ", layout.rank);
  layout.inner = row || kept.empty() || std::abs(reduced_dims[0].strides[0]) <= std::abs(kept[0].strides[0]);
  const KernelDim& vector_dim = layout.inner ? reduced_dims[0] : kept[0];
  for (int dim = 0; dim < layout.rank; ++dim) {
    const KernelDim& entry = dim < layout.kept_rank ? kept[dim] : reduced_dims[dim - layout.kept_rank];
    layout.args.sizes[dim] = entry.size;
    for (int index = 0; index < count; ++index) layout.args.strides[index][dim] = entry.strides[index];
    (dim < layout.kept_rank ? layout.positions : layout.cost) *= entry.size;
  }
  signature.append('|');
  for (int index = 0; index < count; ++index) {
    const at::Tensor& tensor = operands[index];
    const ir::DType dtype = require_ir_dtype(tensor.scalar_type(), op_name);
    const ir::Layout operand_layout = layout_class(vector_dim.strides[index], vector_dim.size);
    layout.dtypes.push_back(dtype);
    layout.layouts.push_back(operand_layout);
    layout.args.data[index] = kernel_data(tensor, op_name);
    layout.bytes += static_cast<size_t>(tensor.numel()) * tensor.element_size();
    signature.append(ir::dtype_name(dtype)).append(static_cast<char>(operand_layout));
    signature.append(index + 1 == input_count ? '>' : ',');
  }
  signature.append("|k").append_number(layout.kept_rank).append('r').append_number(layout.rank - layout.kept_rank);
  signature.append(layout.inner ? 'i' : 'o').append('|');
  return layout;
}

// The launch shape of `layout`: its kept positions, each folding `cost`.
LaunchShape shape_of(const ReductionLayout& layout) {
  LaunchShape shape;
  shape.positions = layout.positions;
  shape.cost_per_position = layout.cost;
  shape.bytes = layout.bytes;
  return shape;
}

// Launches `entry` over `layout` on `stream` (the last operand's), keeping
// `operands` alive until it has run.
void launch_laid_out(Stream& stream, const char* op_name, KernelEntry entry, const ReductionLayout& layout,
                     const LaunchShape& shape, const std::vector<at::Tensor>& operands) {
  launch_kernel_lazily(stream, op_name, entry, layout.args, shape, [&]() {
    return KeepAlive(operands.begin(), operands.end());
  });
}

}  // namespace

bool rows_suit_row_kernel(c10::ArrayRef<at::Tensor> tensors, c10::IntArrayRef row_dims) {
  const at::Tensor& first = tensors[0];
  int64_t row = 1;
  for (int64_t dim : row_dims) row *= first.size(dim);
  if (row == 0) return false;
  for (const at::Tensor& tensor : tensors) {
    int64_t expected = 1;
    for (auto dim = row_dims.rbegin(); dim != row_dims.rend(); ++dim) {
      if (tensor.size(*dim) == 1) continue;
      if (tensor.stride(*dim) != expected) return false;
      expected *= tensor.size(*dim);
    }
  }
  return compiler::suits_row_kernel(first.numel() / row, row);
}

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
  std::vector<at::Tensor> operand_list(inputs.begin(), inputs.end());
  operand_list.insert(operand_list.end(), outputs.begin(), outputs.end());
  const int operands = static_cast<int>(operand_list.size());
  Signature signature(op_key);
  ReductionLayout layout =
      lay_out_reduction(op_name, operand_list, input_count, reduced, spec.logical_order, false, signature);
  LaunchArgs& args = layout.args;
  const int kept_rank = layout.kept_rank, kernel_rank = layout.rank;
  const bool inner = layout.inner;
  const std::vector<ir::DType>& dtypes = layout.dtypes;
  const std::vector<ir::Layout>& layouts = layout.layouts;
  const auto scalar_dtypes = set_scalars(op_name, scalars, args, signature);

  ir::FixedShape fixed;
  if (spec.fixed_shape) fixed = fix_shape(signature, args, kernel_rank, operands);

  auto build_kernel = [&]() {
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
  };
  KernelEntry entry = kernel_for(signature.view(), op_name, build_kernel);
  // Adaptive eager may hold the launch behind the pointwise ops it reads, to
  // run them inside it.
  Stream& stream = stream_of(operand_list.back());
  const LaunchShape shape = shape_of(layout);
  if (!spec.fixed_shape && adaptive::hold_reduction(stream, op_name, signature.view(), entry, args, shape,
                                                    kernel_rank, input_count, operand_list, build_kernel)) {
    return;
  }
  launch_laid_out(stream, op_name, entry, layout, shape, operand_list);
}

void launch_row_reduction(const char* op_name, std::string_view op_key, c10::ArrayRef<at::Tensor> inputs,
                          c10::ArrayRef<at::Tensor> outputs, c10::IntArrayRef reduced,
                          c10::ArrayRef<c10::Scalar> scalars, const RowKernelBody& body, bool fixed_shape) {
  record_static_op(op_name, OpPath::kCompiled);
  const int input_count = static_cast<int>(inputs.size());
  std::vector<at::Tensor> operand_list(inputs.begin(), inputs.end());
  operand_list.insert(operand_list.end(), outputs.begin(), outputs.end());
  for (const at::Tensor& operand : operand_list) {
    TORCH_INTERNAL_ASSERT(operand.sizes().equals(operand_list[0].sizes()), op_name, ": operand sizes differ");
  }
  Signature signature(op_key);
  ReductionLayout layout = lay_out_reduction(op_name, operand_list, input_count, reduced, false, true, signature);
  const auto scalar_dtypes = set_scalars(op_name, scalars, layout.args, signature);
  ir::FixedShape fixed;
  if (fixed_shape) fixed = fix_shape(signature, layout.args, layout.rank, static_cast<int>(operand_list.size()));
  KernelEntry entry = kernel_for(signature.view(), op_name, [&]() {
    ir::Builder builder(std::string(op_key), ir::KernelKind::kRow, layout.rank);
    builder.set_kept_rank(layout.kept_rank);
    std::vector<ir::ValueId> loads;
    std::vector<int> output_indices;
    for (size_t index = 0; index < operand_list.size(); ++index) {
      if (static_cast<int>(index) < input_count) {
        loads.push_back(builder.load(builder.add_input(layout.dtypes[index], layout.layouts[index])));
      } else {
        output_indices.push_back(builder.add_output(layout.dtypes[index], layout.layouts[index]));
      }
    }
    std::vector<ir::ValueId> scalar_values;
    for (ir::DType dtype : scalar_dtypes) scalar_values.push_back(builder.scalar(builder.add_scalar(dtype)));
    std::vector<ir::ValueId> results = body(builder, loads, scalar_values);
    TORCH_INTERNAL_ASSERT(results.size() == output_indices.size(), op_name,
                          ": the row kernel returned the wrong number of values");
    for (size_t output = 0; output < results.size(); ++output) builder.store(output_indices[output], results[output]);
    ir::Kernel kernel = builder.finish();
    kernel.fixed_shape = fixed;
    return kernel;
  });
  launch_laid_out(stream_of(operand_list.back()), op_name, entry, layout, shape_of(layout), operand_list);
}

}  // namespace kiln::torch_integration::compiled
