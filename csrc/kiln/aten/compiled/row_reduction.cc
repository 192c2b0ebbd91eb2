#include "kiln/aten/compiled/row_reduction.h"

#include <algorithm>

#include "kiln/aten/compiled/ir_dtype.h"
#include "kiln/aten/compiled/kernel_launch.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {

void launch_row_reduction(const char* op_name, std::string_view op_key, c10::ArrayRef<at::Tensor> inputs,
                          c10::ArrayRef<at::Tensor> outputs, c10::IntArrayRef reduced, const RowKernelBody& body) {
  record_static_op(op_name, OpPath::kCompiled);
  const int input_count = static_cast<int>(inputs.size());
  const int operands = input_count + static_cast<int>(outputs.size());
  TORCH_CHECK(operands <= ir::kMaxOperands, op_name, ": too many operands for one kernel");
  const at::Tensor& reference = outputs[0];
  const int64_t rank = reference.dim();
  std::vector<bool> is_reduced(rank, false);
  for (int64_t dim : reduced) is_reduced[dim] = true;
  auto operand = [&](int index) -> const at::Tensor& {
    return index < input_count ? inputs[index] : outputs[index - input_count];
  };
  for (int index = 0; index < operands; ++index) {
    TORCH_INTERNAL_ASSERT(operand(index).sizes().equals(reference.sizes()), op_name, ": operand sizes differ");
  }

  std::vector<KernelDim> kept, row;
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    if (reference.size(dim) == 1) continue;
    KernelDim entry{reference.size(dim), {}};
    for (int index = 0; index < operands; ++index) entry.strides[index] = operand(index).stride(dim);
    (is_reduced[dim] ? row : kept).push_back(entry);
  }
  // Fastest first: the first output orders the kept dims, input 0 the row's.
  auto by_stride = [](int operand_index) {
    return [operand_index](const KernelDim& a, const KernelDim& b) {
      return std::abs(a.strides[operand_index]) < std::abs(b.strides[operand_index]);
    };
  };
  std::stable_sort(kept.begin(), kept.end(), by_stride(input_count));
  if (input_count > 0) std::stable_sort(row.begin(), row.end(), by_stride(0));
  coalesce_dims(kept, operands);
  coalesce_dims(row, operands);
  if (row.empty()) row.push_back(KernelDim{1, {}});
  const int kept_rank = static_cast<int>(kept.size());
  const int kernel_rank = kept_rank + static_cast<int>(row.size());
  TORCH_CHECK(kernel_rank <= ir::kMaxRank, op_name, ": the kiln device supports at most ", ir::kMaxRank,
              " dims after merging, got ", kernel_rank);

  LaunchArgs args{};
  int64_t rows = 1, row_elements = 1;
  for (int dim = 0; dim < kernel_rank; ++dim) {
    const KernelDim& entry = dim < kept_rank ? kept[dim] : row[dim - kept_rank];
    args.sizes[dim] = entry.size;
    for (int index = 0; index < operands; ++index) args.strides[index][dim] = entry.strides[index];
    (dim < kept_rank ? rows : row_elements) *= entry.size;
  }

  Signature signature(op_key);
  signature.append('|');
  std::vector<ir::DType> dtypes;
  std::vector<ir::Layout> layouts;
  size_t bytes = 0;
  for (int index = 0; index < operands; ++index) {
    const at::Tensor& tensor = operand(index);
    ir::DType dtype = require_ir_dtype(tensor.scalar_type(), op_name);
    ir::Layout layout = layout_class(row[0].strides[index], row[0].size);
    dtypes.push_back(dtype);
    layouts.push_back(layout);
    args.data[index] = kernel_data(tensor, op_name);
    bytes += static_cast<size_t>(tensor.numel()) * tensor.element_size();
    signature.append(ir::dtype_name(dtype)).append(static_cast<char>(layout));
    signature.append(index + 1 == input_count ? '>' : ',');
  }
  signature.append("|k").append_number(kept_rank).append('r').append_number(kernel_rank - kept_rank).append('|');
  const ir::FixedShape fixed = fix_shape(signature, args, kernel_rank, operands);

  KernelEntry entry = kernel_for(signature.view(), op_name, [&]() {
    ir::Builder builder(std::string(op_key), ir::KernelKind::kRow, kernel_rank);
    builder.set_kept_rank(kept_rank);
    std::vector<ir::ValueId> loads;
    for (int index = 0; index < input_count; ++index) {
      loads.push_back(builder.load(builder.add_input(dtypes[index], layouts[index])));
    }
    std::vector<int> output_indices;
    for (int index = input_count; index < operands; ++index) {
      output_indices.push_back(builder.add_output(dtypes[index], layouts[index]));
    }
    std::vector<ir::ValueId> results = body(builder, loads);
    TORCH_INTERNAL_ASSERT(results.size() == output_indices.size(), op_name,
                          ": the row kernel returned the wrong number of values");
    for (size_t output = 0; output < results.size(); ++output) builder.store(output_indices[output], results[output]);
    ir::Kernel kernel = builder.finish();
    kernel.fixed_shape = fixed;
    return kernel;
  });
  LaunchShape shape;
  shape.positions = rows;
  shape.cost_per_position = row_elements;
  shape.bytes = bytes;
  launch_kernel_lazily(stream_of(outputs[0]), op_name, entry, args, shape, [&]() {
    KeepAlive keep_alive;
    for (int index = 0; index < operands; ++index) keep_alive.push_back(operand(index));
    return keep_alive;
  });
}

}  // namespace kiln::torch_integration::compiled
