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

// The inputs, then the outputs, as one list: operand k is kernel operand k.
struct ElementwiseOperands {
  c10::ArrayRef<at::Tensor> inputs, outputs;
  int input_count() const { return static_cast<int>(inputs.size()); }
  int count() const { return static_cast<int>(inputs.size() + outputs.size()); }
  const at::Tensor& operator[](int index) const {
    return index < input_count() ? inputs[index] : outputs[index - input_count()];
  }
};

// Every operand on the first output's device and of its shape.
void check_operands(const char* op_name, const ElementwiseOperands& operands) {
  const at::Tensor& reference = operands.outputs[0];
  for (int index = 0; index < operands.count(); ++index) {
    check_same_device(reference.device(), operands[index]);
    TORCH_INTERNAL_ASSERT(operands[index].sizes().equals(reference.sizes()), op_name,
                          ": operand ", index, " has shape ", operands[index].sizes(),
                          ", expected ", reference.sizes());
  }
}

// Moves to the front of `dims` the dim whose step moves the fewest bytes of
// memory per position, when it moves fewer than the current innermost: each
// operand's step, in bytes, capped at a cache line (a step that leaves the
// line costs a line wherever it lands). Only operands read or written at
// every position count: a broadcast one (a per-channel vector: stride 0 along
// a dim of more than one element) is read once per row whatever the order.
void move_cheapest_dim_innermost(std::vector<KernelDim>& dims, const ElementwiseOperands& operands) {
  const int count = operands.count();
  std::vector<bool> full_size(count, true);
  for (const KernelDim& dim : dims) {
    for (int index = 0; index < count; ++index) full_size[index] = full_size[index] && dim.strides[index] != 0;
  }
  constexpr int64_t kCacheLineBytes = 64;
  auto step_bytes = [&](const KernelDim& dim) {
    int64_t bytes = 0;
    for (int index = 0; index < count; ++index) {
      if (!full_size[index]) continue;
      const int64_t step = std::abs(dim.strides[index]) * static_cast<int64_t>(operands[index].element_size());
      bytes += std::min(step, kCacheLineBytes);
    }
    return bytes;
  };
  auto best = std::min_element(dims.begin(), dims.end(), [&](const KernelDim& a, const KernelDim& b) {
    return step_bytes(a) < step_bytes(b);
  });
  if (step_bytes(*best) < step_bytes(dims.front())) std::rotate(dims.begin(), best, best + 1);
}

// The kernel's dims: the dims of size > 1, fastest first by the first
// output's strides (or by the operands' bytes, see ElementwiseOptions), merged
// where every operand allows; one dim of size 1 when none is left.
std::vector<KernelDim> kernel_dims(const char* op_name, const ElementwiseOperands& operands,
                                   const ElementwiseOptions& options) {
  const at::Tensor& reference = operands.outputs[0];
  const int64_t rank = reference.dim();
  std::vector<bool> pinned(rank, false);
  for (int64_t dim : options.coordinate_dims) pinned[dim] = true;

  std::vector<KernelDim> dims;
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    if (reference.size(dim) == 1) continue;
    KernelDim entry;
    entry.size = reference.size(dim);
    entry.logical = dim;
    entry.pinned = pinned[dim];
    for (int index = 0; index < operands.count(); ++index) entry.strides[index] = operands[index].stride(dim);
    dims.push_back(entry);
  }
  const int first_output = operands.input_count();
  std::stable_sort(dims.begin(), dims.end(), [first_output](const KernelDim& a, const KernelDim& b) {
    return std::abs(a.strides[first_output]) < std::abs(b.strides[first_output]);
  });
  if (options.innermost_by_operands && dims.size() > 1) move_cheapest_dim_innermost(dims, operands);
  coalesce_dims(dims, operands.count());
  if (dims.empty()) dims.push_back(KernelDim{});
  const int kernel_rank = static_cast<int>(dims.size());
  TORCH_CHECK(kernel_rank <= ir::kMaxRank, op_name, ": the kiln device supports at most ",
              ir::kMaxRank, " dims after merging, got ", kernel_rank);
  return dims;
}

// Each operand's storage dtype and layout class, as the kernel declares them.
struct OperandPlan {
  std::vector<ir::DType> dtypes;
  std::vector<ir::Layout> layouts;
};

// Sizes and strides of `dims` into `args`; returns, per logical dim of a
// tensor of `rank` dims, the kernel dim it went to (-1: a dim of size 1).
std::vector<int> set_dims(const std::vector<KernelDim>& dims, int64_t rank, int operand_count,
                          LaunchArgs& args) {
  std::vector<int> kernel_dim_of(rank, -1);
  for (int dim = 0; dim < static_cast<int>(dims.size()); ++dim) {
    const KernelDim& entry = dims[dim];
    if (entry.logical >= 0) kernel_dim_of[entry.logical] = dim;
    args.sizes[dim] = entry.size;
    for (int index = 0; index < operand_count; ++index) args.strides[index][dim] = entry.strides[index];
  }
  return kernel_dim_of;
}

// Each operand's data pointer into `args`, its dtype and layout class (along
// the `innermost` dim) into `plan` and `signature`, and the tensor into
// `keep_alive`; returns the bytes the launch touches.
size_t set_operands(const char* op_name, const ElementwiseOperands& operands, const KernelDim& innermost,
                    LaunchArgs& args, Signature& signature, OperandPlan& plan, KeepAlive& keep_alive) {
  const int64_t elements = operands.outputs[0].numel();
  size_t bytes = 0;
  for (int index = 0; index < operands.count(); ++index) {
    const at::Tensor& tensor = operands[index];
    ir::DType dtype = require_ir_dtype(tensor.scalar_type(), op_name);
    ir::Layout layout = layout_class(innermost.strides[index], innermost.size);
    plan.dtypes.push_back(dtype);
    plan.layouts.push_back(layout);
    args.data[index] = kernel_data(tensor, op_name);
    keep_alive.push_back(tensor);
    bytes += static_cast<size_t>(elements) * tensor.element_size();
    signature.append(ir::dtype_name(dtype)).append(static_cast<char>(layout));
    signature.append(index + 1 == operands.input_count() ? '>' : ',');
  }
  return bytes;
}

// The kernel of `body` over `kernel_rank` dims: loads every input, declares
// the scalars and outputs, stores what the body returns.
ir::Kernel build_elementwise_kernel(const char* op_name, std::string_view op_key, int kernel_rank,
                                    const ElementwiseOperands& operands, const OperandPlan& plan,
                                    c10::ArrayRef<ir::DType> scalar_dtypes,
                                    const std::vector<int>& kernel_dim_of, const ElementwiseBody& body) {
  ir::Builder builder(std::string(op_key), ir::KernelKind::kPointwise, kernel_rank);
  ElementwiseContext context{builder, {}, {}, {}, {}, kernel_dim_of};
  const int input_count = operands.input_count();
  for (int index = 0; index < input_count; ++index) {
    context.inputs.push_back(builder.load(builder.add_input(plan.dtypes[index], plan.layouts[index])));
    context.input_dtypes.push_back(plan.dtypes[index]);
  }
  for (ir::DType dtype : scalar_dtypes) context.scalars.push_back(builder.scalar(builder.add_scalar(dtype)));
  std::vector<int> output_indices;
  for (int index = input_count; index < operands.count(); ++index) {
    output_indices.push_back(builder.add_output(plan.dtypes[index], plan.layouts[index]));
    context.output_dtypes.push_back(plan.dtypes[index]);
  }
  std::vector<ir::ValueId> results = body(context);
  TORCH_INTERNAL_ASSERT(results.size() == output_indices.size(), op_name, ": body returned ",
                        results.size(), " values for ", output_indices.size(), " outputs");
  for (size_t output = 0; output < results.size(); ++output) {
    builder.store(output_indices[output], results[output]);
  }
  return builder.finish();
}

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
  const ElementwiseOperands operands{inputs, outputs};
  const int operand_count = operands.count();
  TORCH_CHECK(operand_count <= ir::kMaxOperands, op_name, ": too many operands for one kernel");
  const at::Tensor& reference = outputs[0];
  const int64_t rank = reference.dim();
  TORCH_INTERNAL_ASSERT(rank <= kMaxLogicalDims);
  if (reference.numel() == 0) return;
  check_operands(op_name, operands);

  const std::vector<KernelDim> dims = kernel_dims(op_name, operands, options);
  const int kernel_rank = static_cast<int>(dims.size());
  LaunchArgs args{};
  const std::vector<int> kernel_dim_of = set_dims(dims, rank, operand_count, args);
  if (options.philox.has_value()) {
    args.seed = options.philox->seed;
    args.offset = options.philox->offset;
  }

  // The signature: the op, each operand's dtype and layout, the rank, the
  // coordinate dims' places and the scalars' kinds.
  Signature signature(op_key);
  signature.append('|');
  OperandPlan plan;
  KeepAlive keep_alive;
  const size_t bytes = set_operands(op_name, operands, dims[0], args, signature, plan, keep_alive);
  signature.append("|r").append_number(kernel_rank);
  for (int64_t dim : options.coordinate_dims) {
    signature.append('c').append_number(kernel_dim_of[dim]);
  }
  signature.append('|');
  const auto scalar_dtypes = set_scalars(op_name, scalars, args, signature);
  ir::FixedShape fixed;
  if (options.fixed_shape) fixed = fix_shape(signature, args, kernel_rank, operand_count);

  KernelEntry entry = kernel_for(signature.view(), op_name, [&]() {
    ir::Kernel kernel = build_elementwise_kernel(op_name, op_key, kernel_rank, operands, plan, scalar_dtypes,
                                                 kernel_dim_of, body);
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
