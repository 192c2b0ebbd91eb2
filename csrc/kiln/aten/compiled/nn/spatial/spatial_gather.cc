#include "kiln/aten/compiled/nn/spatial/spatial_gather.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <functional>
#include <string>

#include "kiln/aten/compiled/launch/indexed_kernel.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::ValueId;

// The axis' source indices times `stride`: element offsets into the tensor
// the kernel gathers from (or scatters into), as a device tensor.
at::Tensor offset_table(const SpatialAxis& axis, int64_t stride, const at::Device& device) {
  const int64_t count = static_cast<int64_t>(axis.indices.size());
  at::Tensor table = at::empty({count}, at::TensorOptions().dtype(at::kLong));
  int64_t* data = table.data_ptr<int64_t>();
  for (int64_t k = 0; k < count; ++k) data[k] = axis.indices[k] * stride;
  return table.to(device);
}

// The axis' weights rounded to `dtype` (they are exact in double: the
// caller computed them in the CPU's opmath type), as a device tensor.
at::Tensor weight_table(const SpatialAxis& axis, at::ScalarType dtype, const at::Device& device) {
  const int64_t count = static_cast<int64_t>(axis.weights.size());
  at::Tensor table = at::empty({count}, at::TensorOptions().dtype(at::kDouble));
  double* data = table.data_ptr<double>();
  for (int64_t k = 0; k < count; ++k) data[k] = axis.weights[k];
  return table.to(dtype).to(device);
}

// A table read along `dim` of an iteration space of `rank` dims (plus, when
// `tap_dim` >= 0, stepping through its taps along that dim).
KernelOperand table_operand(const at::Tensor& table, int64_t rank, int64_t dim, int64_t taps,
                            int64_t tap_dim = -1) {
  c10::DimVector strides(rank, 0);
  strides[dim] = taps;
  if (tap_dim >= 0) strides[tap_dim] = 1;
  return operand_with_strides(table, strides);
}

// `tensor`'s strides with the axes' dims zeroed, padded with zeros to `rank`:
// the base of the rows the tables index.
KernelOperand base_operand(const at::Tensor& tensor, const std::vector<SpatialAxis>& axes,
                           int64_t rank) {
  c10::DimVector strides(tensor.strides().begin(), tensor.strides().end());
  strides.resize(rank, 0);
  for (const SpatialAxis& axis : axes) strides[axis.dim] = 0;
  return operand_with_strides(tensor, strides);
}

std::string axes_key(const char* prefix, const std::vector<SpatialAxis>& axes) {
  std::string key = prefix;
  for (const SpatialAxis& axis : axes) {
    key += '|' + std::to_string(axis.taps) + (axis.weights.empty() ? 'n' : 'w');
  }
  return key;
}

ir::DType compute_of(ir::DType storage) { return ir::compute_dtype(storage); }

}  // namespace

void spatial_gather(const char* op_name, const at::Tensor& input, const at::Tensor& output,
                    const std::vector<SpatialAxis>& axes, at::ScalarType weight_dtype) {
  if (output.numel() == 0) return;
  const int64_t rank = output.dim();
  std::vector<KernelOperand> inputs{base_operand(input, axes, rank)};
  for (const SpatialAxis& axis : axes) {
    inputs.push_back(table_operand(offset_table(axis, input.stride(axis.dim), output.device()),
                                   rank, axis.dim, axis.taps));
    if (!axis.weights.empty()) {
      inputs.push_back(table_operand(weight_table(axis, weight_dtype, output.device()), rank,
                                     axis.dim, axis.taps));
    }
  }
  const std::string key = axes_key("spatial_gather", axes);
  IndexedKernelSpec spec;
  spec.key = key;
  spec.body = [&axes](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    const ir::DType compute = compute_of(context.input_dtypes[0]);
    // Operand numbers of each axis' offset and weight tables.
    std::vector<int> offset_input, weight_input;
    int next = 1;
    for (const SpatialAxis& axis : axes) {
      offset_input.push_back(next++);
      weight_input.push_back(axis.weights.empty() ? -1 : next++);
    }
    // ATen's order: the taps of axis `level` each combine the (recursively
    // interpolated) rows below them; each partial sum is weighted, then added.
    std::function<ValueId(size_t, ValueId)> combine = [&](size_t level, ValueId offset) -> ValueId {
      if (level == axes.size()) return builder.indexed_load(0, offset);
      ValueId result = -1;
      for (int64_t tap = 0; tap < axes[level].taps; ++tap) {
        ValueId tap_offset = builder.constant(static_cast<double>(tap), ir::DType::kInt64);
        ValueId source = builder.indexed_load(offset_input[level], tap_offset);
        ValueId value = combine(level + 1, builder.binary(ir::OpCode::kAdd, offset, source));
        if (weight_input[level] >= 0) {
          ValueId weight = builder.cast(builder.indexed_load(weight_input[level], tap_offset), compute);
          value = builder.binary(ir::OpCode::kMultiply, value, weight);
        }
        result = tap == 0 ? value : builder.binary(ir::OpCode::kAdd, result, value);
      }
      return result;
    };
    ValueId value = combine(0, builder.constant(0, ir::DType::kInt64));
    builder.store(0, builder.cast(value, context.output_dtypes[0]));
  };
  launch_indexed_kernel(op_name, spec, output.sizes(), inputs, {operand_of(output)});
}

void spatial_scatter_add(const char* op_name, const at::Tensor& grad_output,
                         const at::Tensor& grad_input, const std::vector<SpatialAxis>& axes,
                         at::ScalarType weight_dtype, bool float_buffer) {
  const bool buffered = float_buffer && (grad_input.scalar_type() == at::kHalf ||
                                         grad_input.scalar_type() == at::kBFloat16);
  at::Tensor target = buffered ? at::zeros(grad_input.sizes(), grad_input.options().dtype(at::kFloat))
                               : grad_input;
  if (!buffered) target.zero_();
  if (grad_output.numel() != 0) {
    // Iterate grad_output's positions and, innermost, each axis' taps, in
    // row-major order: the order in which the CPU adds.
    const int64_t rank = grad_output.dim();
    const int64_t full_rank = rank + static_cast<int64_t>(axes.size());
    c10::DimVector shape(grad_output.sizes().begin(), grad_output.sizes().end());
    for (const SpatialAxis& axis : axes) shape.push_back(axis.taps);
    c10::DimVector output_strides(grad_output.strides().begin(), grad_output.strides().end());
    output_strides.resize(full_rank, 0);
    std::vector<KernelOperand> inputs{operand_with_strides(grad_output, output_strides)};
    for (size_t a = 0; a < axes.size(); ++a) {
      const SpatialAxis& axis = axes[a];
      const int64_t tap_dim = rank + static_cast<int64_t>(a);
      inputs.push_back(table_operand(offset_table(axis, target.stride(axis.dim), target.device()),
                                     full_rank, axis.dim, axis.taps, tap_dim));
      if (!axis.weights.empty()) {
        inputs.push_back(table_operand(weight_table(axis, weight_dtype, target.device()), full_rank,
                                       axis.dim, axis.taps, tap_dim));
      }
    }
    const std::string key = axes_key("spatial_scatter_add", axes);
    IndexedKernelSpec spec;
    spec.key = key;
    spec.single_threaded = true;
    spec.logical_order = true;
    spec.body = [&axes](IndexedKernelContext& context) {
      ir::Builder& builder = context.builder;
      const ir::DType compute = compute_of(context.input_dtypes[0]);
      ValueId offset = builder.constant(0, ir::DType::kInt64);
      ValueId weight = -1;
      int next = 1;
      for (const SpatialAxis& axis : axes) {
        offset = builder.binary(ir::OpCode::kAdd, offset, builder.load(next++));
        if (axis.weights.empty()) continue;
        ValueId factor = builder.cast(builder.load(next++), compute);
        weight = weight < 0 ? factor : builder.binary(ir::OpCode::kMultiply, weight, factor);
      }
      ValueId value = builder.load(0);
      if (weight >= 0) value = builder.binary(ir::OpCode::kMultiply, weight, value);
      builder.store_indexed(0, builder.cast(value, context.output_dtypes[0]), offset,
                            /*accumulate=*/true);
    };
    launch_indexed_kernel(op_name, spec, shape, inputs, {base_operand(target, axes, full_rank)});
  }
  if (buffered) copy_tensor(op_name, grad_input, target);
}

}  // namespace kiln::torch_integration::compiled
