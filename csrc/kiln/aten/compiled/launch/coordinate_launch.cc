#include "kiln/aten/compiled/launch/coordinate_launch.h"

#include <c10/util/SmallVector.h>

#include <algorithm>

#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

// `outer` continues `inner` in every operand: one dim of inner.size * outer.size.
bool continues(const KernelDim& inner, const KernelDim& outer, int operands) {
  for (int k = 0; k < operands; ++k) {
    if (outer.strides[k] != inner.strides[k] * inner.size) return false;
  }
  return true;
}

}  // namespace

void launch_with_coordinates(const char* op_name, std::string_view op_key,
                             const at::Tensor& output, c10::ArrayRef<at::Tensor> inputs,
                             c10::ArrayRef<c10::Scalar> scalars, int coordinate_dims,
                             const CoordinateBody& body) {
  record_static_op(op_name, OpPath::kCompiled);
  if (output.numel() == 0) return;
  const int operands = static_cast<int>(inputs.size()) + 1;
  TORCH_CHECK(operands <= ir::kMaxOperands, op_name, ": too many operands for one kernel");
  TORCH_CHECK(scalars.size() <= static_cast<size_t>(ir::kMaxScalars), op_name,
              ": too many scalar operands for one kernel");
  auto operand = [&](int k) -> const at::Tensor& {
    return k < static_cast<int>(inputs.size()) ? inputs[k] : output;
  };

  // Dims innermost first; the coordinate dims as they are, batch dims merged.
  const int64_t rank = output.dim();
  const int64_t kept = std::min<int64_t>(coordinate_dims, rank);
  c10::SmallVector<KernelDim, ir::kMaxRank> dims;
  for (int64_t d = 0; d < rank; ++d) {
    KernelDim dim;
    int64_t tensor_dim = rank - 1 - d;
    dim.size = output.size(tensor_dim);
    for (int k = 0; k < operands; ++k) dim.strides[k] = operand(k).stride(tensor_dim);
    if (d >= kept) {
      if (dim.size == 1) continue;
      if (static_cast<int64_t>(dims.size()) > kept && continues(dims.back(), dim, operands)) {
        dims.back().size *= dim.size;
        continue;
      }
    }
    dims.push_back(dim);
  }
  if (dims.empty()) dims.push_back(KernelDim());
  const int kernel_rank = static_cast<int>(dims.size());
  TORCH_CHECK(kernel_rank <= ir::kMaxRank, op_name, ": the kiln device supports at most ",
              ir::kMaxRank, " dims after merging batch dims, got ", kernel_rank);

  LaunchArgs args{};
  KeepAlive keep_alive;
  Signature signature(op_key);
  signature.append('|');
  c10::SmallVector<ir::Operand, 4> plans;
  size_t bytes = 0;
  for (int k = 0; k < operands; ++k) {
    const at::Tensor& tensor = operand(k);
    ir::DType dtype = require_ir_dtype(tensor.scalar_type(), op_name);
    args.data[k] = kernel_data(tensor, op_name);
    for (int d = 0; d < kernel_rank; ++d) args.strides[k][d] = dims[d].strides[k];
    ir::Layout layout = layout_class(dims[0].strides[k], dims[0].size);
    plans.push_back({dtype, layout});
    keep_alive.push_back(tensor);
    bytes += static_cast<size_t>(output.numel()) * static_cast<size_t>(ir::dtype_size(dtype));
    if (k + 1 == operands) signature.append('>');
    signature.append(ir::dtype_name(dtype)).append(static_cast<char>(layout)).append(',');
  }
  for (int d = 0; d < kernel_rank; ++d) args.sizes[d] = dims[d].size;
  signature.append("|r").append_number(kernel_rank).append('|');
  const auto scalar_dtypes = set_scalars(op_name, scalars, args, signature);

  KernelEntry entry = kernel_for(signature.view(), op_name, [&]() {
    ir::Builder builder(std::string(op_key), ir::KernelKind::kPointwise, kernel_rank);
    CoordinateContext context{builder, {}, {}, {}, plans.back().dtype};
    for (int k = 0; k + 1 < operands; ++k) {
      context.inputs.push_back(builder.load(builder.add_input(plans[k].dtype, plans[k].layout)));
      context.input_dtypes.push_back(plans[k].dtype);
    }
    for (ir::DType dtype : scalar_dtypes) {
      context.scalars.push_back(builder.scalar(builder.add_scalar(dtype)));
    }
    int out = builder.add_output(plans.back().dtype, plans.back().layout);
    builder.store(out, body(context));
    return builder.finish();
  });
  LaunchShape shape;
  shape.positions = output.numel();
  shape.bytes = bytes;
  launch_kernel(stream_of(output), op_name, entry, args, shape, std::move(keep_alive));
}

}  // namespace kiln::torch_integration::compiled
