#include "kiln/aten/compiled/launch/elementwise.h"

#include <algorithm>

#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/device_checks.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

constexpr int kMaxLogicalDims = 64;

}  // namespace

ir::ValueId ElementwiseContext::coordinate(int64_t dim) {
  TORCH_INTERNAL_ASSERT(dim >= 0 && dim < static_cast<int64_t>(kernel_dim_of.size()));
  int kernel_dim = kernel_dim_of[dim];
  if (kernel_dim < 0) return builder.constant(0, ir::DType::kInt64);
  return builder.coordinate(kernel_dim);
}

at::Tensor along_dim(const at::Tensor& vector, int64_t rank, int64_t dim) {
  if (!vector.defined()) return vector;
  TORCH_INTERNAL_ASSERT(vector.dim() == 1);
  c10::DimVector sizes(rank, 1), strides(rank, 0);
  sizes[dim] = vector.size(0);
  strides[dim] = vector.stride(0);
  return vector.as_strided(sizes, strides);
}

void launch_elementwise(const char* op_name, std::string_view op_key,
                        c10::ArrayRef<at::Tensor> inputs, c10::ArrayRef<at::Tensor> outputs,
                        c10::ArrayRef<c10::Scalar> scalars, const ElementwiseBody& body,
                        const ElementwiseOptions& options) {
  record_static_op(op_name, OpPath::kCompiled);
  TORCH_INTERNAL_ASSERT(!outputs.empty());
  const int input_count = static_cast<int>(inputs.size());
  const int operands = input_count + static_cast<int>(outputs.size());
  TORCH_CHECK(operands <= ir::kMaxOperands, op_name, ": too many operands for one kernel");
  const at::Tensor& reference = outputs[0];
  const int64_t rank = reference.dim();
  TORCH_INTERNAL_ASSERT(rank <= kMaxLogicalDims);
  if (reference.numel() == 0) return;
  auto operand = [&](int index) -> const at::Tensor& {
    return index < input_count ? inputs[index] : outputs[index - input_count];
  };
  for (int index = 0; index < operands; ++index) {
    check_same_device(reference.device(), operand(index));
    TORCH_INTERNAL_ASSERT(operand(index).sizes().equals(reference.sizes()), op_name,
                          ": operand ", index, " has shape ", operand(index).sizes(),
                          ", expected ", reference.sizes());
  }
  std::vector<bool> pinned(rank, false);
  for (int64_t dim : options.coordinate_dims) pinned[dim] = true;

  // Dims of size > 1, fastest first by the first output's strides.
  std::vector<KernelDim> dims;
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    if (reference.size(dim) == 1) continue;
    KernelDim entry;
    entry.size = reference.size(dim);
    entry.logical = dim;
    entry.pinned = pinned[dim];
    for (int index = 0; index < operands; ++index) entry.strides[index] = operand(index).stride(dim);
    dims.push_back(entry);
  }
  const int first_output = input_count;
  std::stable_sort(dims.begin(), dims.end(), [first_output](const KernelDim& a, const KernelDim& b) {
    return std::abs(a.strides[first_output]) < std::abs(b.strides[first_output]);
  });
  if (options.innermost_by_operands && dims.size() > 1) {
    // The innermost dim is the one whose step moves the fewest bytes of
    // memory per position: each operand's step, in bytes, capped at a cache
    // line (a step that leaves the line costs a line wherever it lands).
    // Only operands read or written at every position count: a broadcast one
    // (a per-channel vector: stride 0 along a dim of more than one element)
    // is read once per row whatever the order.
    std::vector<bool> full_size(operands, true);
    for (const KernelDim& dim : dims) {
      for (int index = 0; index < operands; ++index) full_size[index] = full_size[index] && dim.strides[index] != 0;
    }
    constexpr int64_t kCacheLineBytes = 64;
    auto step_bytes = [&](const KernelDim& dim) {
      int64_t bytes = 0;
      for (int index = 0; index < operands; ++index) {
        if (!full_size[index]) continue;
        const int64_t step = std::abs(dim.strides[index]) * static_cast<int64_t>(operand(index).element_size());
        bytes += std::min(step, kCacheLineBytes);
      }
      return bytes;
    };
    auto best = std::min_element(dims.begin(), dims.end(), [&](const KernelDim& a, const KernelDim& b) {
      return step_bytes(a) < step_bytes(b);
    });
    if (step_bytes(*best) < step_bytes(dims.front())) std::rotate(dims.begin(), best, best + 1);
  }
  coalesce_dims(dims, operands);
  if (dims.empty()) dims.push_back(KernelDim{});
  const int kernel_rank = static_cast<int>(dims.size());
  TORCH_CHECK(kernel_rank <= ir::kMaxRank, op_name, ": the kiln device supports at most ",
              ir::kMaxRank, " dims after merging, got ", kernel_rank);

  std::vector<int> kernel_dim_of(rank, -1);
  LaunchArgs args{};
  for (int dim = 0; dim < kernel_rank; ++dim) {
    const KernelDim& entry = dims[dim];
    if (entry.logical >= 0) kernel_dim_of[entry.logical] = dim;
    args.sizes[dim] = entry.size;
    for (int index = 0; index < operands; ++index) args.strides[index][dim] = entry.strides[index];
  }
  if (options.philox.has_value()) {
    args.seed = options.philox->seed;
    args.offset = options.philox->offset;
  }

  Signature signature(op_key);
  signature.append('|');
  std::vector<ir::DType> dtypes;
  std::vector<ir::Layout> layouts;
  KeepAlive keep_alive;
  size_t bytes = 0;
  for (int index = 0; index < operands; ++index) {
    const at::Tensor& tensor = operand(index);
    ir::DType dtype = require_ir_dtype(tensor.scalar_type(), op_name);
    ir::Layout layout = layout_class(dims[0].strides[index], dims[0].size);
    dtypes.push_back(dtype);
    layouts.push_back(layout);
    args.data[index] = kernel_data(tensor, op_name);
    keep_alive.push_back(tensor);
    bytes += static_cast<size_t>(reference.numel()) * tensor.element_size();
    signature.append(ir::dtype_name(dtype)).append(static_cast<char>(layout));
    signature.append(index + 1 == input_count ? '>' : ',');
  }
  signature.append("|r").append_number(kernel_rank);
  for (int64_t dim : options.coordinate_dims) {
    signature.append('c').append_number(kernel_dim_of[dim]);
  }
  signature.append('|');
  const auto scalar_dtypes = set_scalars(op_name, scalars, args, signature);
  ir::FixedShape fixed;
  if (options.fixed_shape) fixed = fix_shape(signature, args, kernel_rank, operands);

  KernelEntry entry = kernel_for(signature.view(), op_name, [&]() {
    ir::Builder builder(std::string(op_key), ir::KernelKind::kPointwise, kernel_rank);
    ElementwiseContext context{builder, {}, {}, {}, {}, kernel_dim_of};
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
    std::vector<ir::ValueId> results = body(context);
    TORCH_INTERNAL_ASSERT(results.size() == output_indices.size(), op_name, ": body returned ",
                          results.size(), " values for ", output_indices.size(), " outputs");
    for (size_t output = 0; output < results.size(); ++output) {
      builder.store(output_indices[output], results[output]);
    }
    ir::Kernel kernel = builder.finish();
    kernel.fixed_shape = fixed;
    return kernel;
  });
  LaunchShape shape;
  shape.positions = reference.numel();
  shape.cost_per_position = options.cost_per_position;
  shape.bytes = bytes;
  launch_kernel(stream_of(reference), op_name, entry, args, shape, std::move(keep_alive));
}

}  // namespace kiln::torch_integration::compiled
