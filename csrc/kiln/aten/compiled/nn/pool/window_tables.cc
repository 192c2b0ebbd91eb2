#include "kiln/aten/compiled/nn/pool/window_tables.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

// Appends each dim's tables (inputs 1 + 2k, 2 + 2k) over an iteration space
// of `rank` dims whose dims 2..4 are the output's spatial dims and, when
// `tap_dims`, dims 5..7 each dim's taps.
void add_window_tables(std::vector<KernelOperand>& inputs, const std::array<DimTables, 3>& tables,
                       const std::array<int64_t, 3>& taps, int64_t rank, bool tap_dims) {
  for (int k = 0; k < 3; ++k) {
    c10::DimVector offset_strides(rank, 0), per_output_strides(rank, 0);
    offset_strides[2 + k] = taps[k];
    per_output_strides[2 + k] = 1;
    if (tap_dims) offset_strides[5 + k] = 1;
    inputs.push_back(operand_with_strides(tables[k].offsets, offset_strides));
    inputs.push_back(operand_with_strides(tables[k].per_output, per_output_strides));
  }
}

}  // namespace

at::Tensor batched_5d(const at::Tensor& tensor) { return tensor.dim() == 5 ? tensor : tensor.unsqueeze(0); }

void launch_window_forward(const char* op_name, const IndexedKernelSpec& spec, const at::Tensor& input,
                           const at::Tensor& output, const std::array<DimTables, 3>& tables,
                           const std::array<int64_t, 3>& taps, c10::ArrayRef<c10::Scalar> scalars) {
  // The input as the base of its (batch, channel) plane: taps are indexed loads.
  std::vector<KernelOperand> inputs{operand_with_strides(input, {input.stride(0), input.stride(1), 0, 0, 0})};
  add_window_tables(inputs, tables, taps, 5, /*tap_dims=*/false);
  launch_indexed_kernel(op_name, spec, output.sizes(), inputs, {operand_of(output)}, scalars);
}

void launch_window_backward(const char* op_name, const IndexedKernelSpec& spec,
                            const at::Tensor& gradient, const at::Tensor& target,
                            const std::array<DimTables, 3>& tables, const std::array<int64_t, 3>& taps,
                            c10::ArrayRef<c10::Scalar> scalars) {
  c10::DimVector shape(gradient.sizes().begin(), gradient.sizes().end());
  shape.insert(shape.end(), taps.begin(), taps.end());
  // grad_output stays put along the tap dims.
  c10::DimVector gradient_strides(gradient.strides().begin(), gradient.strides().end());
  gradient_strides.resize(8, 0);
  std::vector<KernelOperand> inputs{operand_with_strides(gradient, gradient_strides)};
  add_window_tables(inputs, tables, taps, 8, /*tap_dims=*/true);
  launch_indexed_kernel(op_name, spec, shape, inputs,
                        {operand_with_strides(target, {target.stride(0), target.stride(1), 0, 0, 0, 0, 0, 0})},
                        scalars);
}

WindowTaps load_window_taps(IndexedKernelContext& context, const std::array<int64_t, 3>& taps) {
  ir::Builder& builder = context.builder;
  auto i64 = [&](int64_t value) { return builder.constant(static_cast<double>(value), ir::DType::kInt64); };
  WindowTaps window;
  for (int k = 0; k < 3; ++k) {
    for (int64_t t = 0; t < taps[k]; ++t) {
      ValueId entry = builder.indexed_load(1 + 2 * k, i64(t));
      window.offset[k].push_back(entry);
      window.valid[k].push_back(builder.binary(OpCode::kLessEqual, i64(0), entry));
    }
  }
  return window;
}

WindowTap load_window_tap(IndexedKernelContext& context) {
  ir::Builder& builder = context.builder;
  WindowTap tap;
  tap.zero = builder.constant(0, ir::DType::kInt64);
  tap.offset = tap.zero;
  for (int k = 0; k < 3; ++k) {
    ValueId entry = builder.load(1 + 2 * k);
    ValueId inside = builder.binary(OpCode::kLessEqual, tap.zero, entry);
    tap.ok = k == 0 ? inside : builder.binary(OpCode::kLogicalAnd, tap.ok, inside);
    tap.offset = builder.binary(OpCode::kAdd, tap.offset, entry);
  }
  return tap;
}

void scatter_add_at_tap(IndexedKernelContext& context, const WindowTap& tap, ValueId delta) {
  ir::Builder& builder = context.builder;
  builder.store_indexed(0, builder.select(tap.ok, delta, builder.constant(0, builder.dtype_of(delta))),
                        builder.select(tap.ok, tap.offset, tap.zero), /*accumulate=*/true);
}

}  // namespace kiln::torch_integration::compiled
