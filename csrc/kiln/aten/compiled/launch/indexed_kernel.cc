#include "kiln/aten/compiled/launch/indexed_kernel.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/native/device_memory.h"

namespace kiln::torch_integration::compiled {
namespace {

}  // namespace

KernelOperand operand_of(const at::Tensor& view) {
  KernelOperand operand;
  operand.tensor = view;
  operand.strides.assign(view.strides().begin(), view.strides().end());
  return operand;
}

KernelOperand operand_with_strides(const at::Tensor& tensor, c10::IntArrayRef strides,
                                   int64_t offset) {
  KernelOperand operand;
  operand.tensor = tensor;
  operand.offset = offset;
  operand.strides.assign(strides.begin(), strides.end());
  return operand;
}

void launch_indexed_kernel(const char* op_name, const IndexedKernelSpec& spec,
                           c10::IntArrayRef shape, c10::ArrayRef<KernelOperand> inputs,
                           c10::ArrayRef<KernelOperand> outputs,
                           c10::ArrayRef<c10::Scalar> scalars) {
  const int input_count = static_cast<int>(inputs.size());
  const int operands = input_count + static_cast<int>(outputs.size());
  TORCH_INTERNAL_ASSERT(!outputs.empty(), op_name, ": a kernel needs an output");
  TORCH_CHECK(operands <= ir::kMaxOperands, op_name, ": too many operands for one kernel");
  TORCH_CHECK(scalars.size() <= static_cast<size_t>(ir::kMaxScalars), op_name,
              ": too many scalars for one kernel");
  auto operand = [&](int index) -> const KernelOperand& {
    return index < input_count ? inputs[index] : outputs[index - input_count];
  };
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t positions = 1;
  for (int64_t size : shape) positions *= size;
  for (int index = 0; index < operands; ++index) {
    TORCH_INTERNAL_ASSERT(static_cast<int64_t>(operand(index).strides.size()) == rank, op_name,
                          ": operand ", index, " has ", operand(index).strides.size(),
                          " strides for ", rank, " dims");
  }
  if (positions == 0) return;

  std::vector<KernelDim> dims;
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    if (shape[dim] == 1 && !spec.logical_order) continue;
    KernelDim entry{shape[dim], {}};
    for (int index = 0; index < operands; ++index) entry.strides[index] = operand(index).strides[dim];
    dims.push_back(entry);
  }
  if (!spec.logical_order) {
    int order = spec.order_by < 0 ? input_count : spec.order_by;
    std::stable_sort(dims.begin(), dims.end(), [order](const KernelDim& a, const KernelDim& b) {
      return std::abs(a.strides[order]) < std::abs(b.strides[order]);
    });
    coalesce_dims(dims, operands);
  }
  if (dims.empty()) dims.push_back(KernelDim{1, {}});
  const int kernel_rank = static_cast<int>(dims.size());
  TORCH_CHECK(kernel_rank <= ir::kMaxRank, op_name, ": the kiln device supports at most ",
              ir::kMaxRank, " dims after merging, got ", kernel_rank);

  LaunchArgs args;
  for (int dim = 0; dim < kernel_rank; ++dim) {
    args.sizes[dim] = dims[dim].size;
    for (int index = 0; index < operands; ++index) args.strides[index][dim] = dims[dim].strides[index];
  }
  Signature signature(spec.key);
  signature.append('|');
  std::vector<ir::DType> dtypes;
  std::vector<ir::Layout> layouts;
  KeepAlive keep_alive;
  size_t bytes = 0;
  for (int index = 0; index < operands; ++index) {
    const KernelOperand& entry = operand(index);
    ir::DType dtype = require_ir_dtype(entry.tensor.scalar_type(), op_name);
    ir::Layout layout = layout_class(dims[0].strides[index], dims[0].size);
    dtypes.push_back(dtype);
    layouts.push_back(layout);
    int64_t element = entry.tensor.element_size();
    args.data[index] = kernel_data(entry.tensor, op_name) + entry.offset * element;
    keep_alive.push_back(entry.tensor);
    bytes += static_cast<size_t>(positions * element);
    signature.append(ir::dtype_name(dtype)).append(static_cast<char>(layout));
    signature.append(index + 1 == input_count ? '>' : ',');
  }
  signature.append("|r").append_number(kernel_rank).append('|');
  const auto scalar_dtypes = set_scalars(op_name, scalars, args, signature);
  signature.append(spec.single_threaded ? "|1" : "|n").append(spec.logical_order ? 'l' : 'm');

  KernelEntry entry = kernel_for(signature.view(), op_name, [&]() {
    ir::Builder builder(std::string(spec.key), ir::KernelKind::kPointwise, kernel_rank);
    IndexedKernelContext context{builder, {}, {}, {}};
    for (int index = 0; index < operands; ++index) {
      if (index < input_count) {
        builder.add_input(dtypes[index], layouts[index]);
        context.input_dtypes.push_back(dtypes[index]);
      } else {
        builder.add_output(dtypes[index], layouts[index]);
        context.output_dtypes.push_back(dtypes[index]);
      }
    }
    for (ir::DType dtype : scalar_dtypes) context.scalars.push_back(builder.scalar(builder.add_scalar(dtype)));
    spec.body(context);
    ir::Kernel kernel = builder.finish();
    TORCH_INTERNAL_ASSERT(kernel.single_threaded == spec.single_threaded, op_name,
                          ": single_threaded does not match the kernel body");
    return kernel;
  });
  LaunchShape launch;
  launch.positions = positions;
  launch.bytes = bytes;
  launch.single_threaded = spec.single_threaded;
  launch_kernel(stream_of(outputs[0].tensor), op_name, entry, args, launch, std::move(keep_alive));
}

IndexOffset index_offset(ir::Builder& builder, ir::ValueId index, ir::ValueId size,
                         ir::ValueId stride, bool wraps) {
  using ir::OpCode;
  ir::ValueId value = builder.cast(index, ir::DType::kInt64);
  ir::ValueId zero = builder.constant(0, ir::DType::kInt64);
  if (wraps) {
    ir::ValueId negative = builder.binary(OpCode::kLess, value, zero);
    value = builder.select(negative, builder.binary(OpCode::kAdd, value, size), value);
  }
  ir::ValueId valid = builder.binary(OpCode::kLogicalAnd,
                                     builder.binary(OpCode::kGreaterEqual, value, zero),
                                     builder.binary(OpCode::kLess, value, size));
  ir::ValueId clamped = builder.select(valid, value, zero);
  return {builder.binary(OpCode::kMultiply, clamped, stride), valid};
}

IndexOffset sum_index_offsets(IndexedKernelContext& context, int first_input, int first_scalar,
                              int count, bool wraps) {
  ir::Builder& builder = context.builder;
  IndexOffset total{ir::kNoValue, ir::kNoValue};
  for (int term = 0; term < count; ++term) {
    IndexOffset part = index_offset(builder, context.load(first_input + term),
                                    context.scalars[first_scalar + 2 * term],
                                    context.scalars[first_scalar + 2 * term + 1], wraps);
    if (term == 0) {
      total = part;
      continue;
    }
    total.offset = builder.binary(ir::OpCode::kAdd, total.offset, part.offset);
    total.valid = builder.binary(ir::OpCode::kLogicalAnd, total.valid, part.valid);
  }
  return total;
}

void add_index_terms(c10::ArrayRef<IndexTerm> terms, std::vector<KernelOperand>& inputs,
                     std::vector<c10::Scalar>& scalars) {
  for (const IndexTerm& term : terms) {
    inputs.push_back(term.index);
    scalars.emplace_back(term.size);
    scalars.emplace_back(term.stride);
  }
}

std::vector<IndexTerm> fold_index_terms(const char* op_name, c10::IntArrayRef shape,
                                        std::vector<IndexTerm> terms, bool wraps, int max_terms) {
  while (static_cast<int>(terms.size()) > max_terms) {
    int group = std::min<int>(kMaxTermsPerKernel, static_cast<int>(terms.size()) - max_terms + 1);
    at::Tensor offsets = at::empty(shape, terms[0].index.tensor.options().dtype(at::kLong));
    std::vector<KernelOperand> inputs;
    std::vector<c10::Scalar> scalars;
    add_index_terms(c10::ArrayRef<IndexTerm>(terms).slice(0, group), inputs, scalars);
    IndexedKernelSpec spec;
    spec.key = wraps ? "index_offsets_wrap" : "index_offsets";
    spec.body = [group, wraps](IndexedKernelContext& context) {
      context.builder.store(0, sum_index_offsets(context, 0, 0, group, wraps).offset);
    };
    launch_indexed_kernel(op_name, spec, shape, inputs, {operand_of(offsets)}, scalars);
    IndexTerm folded{operand_of(offsets), std::numeric_limits<int64_t>::max(), 1};
    terms.erase(terms.begin(), terms.begin() + group);
    terms.insert(terms.begin(), folded);
  }
  return terms;
}

int64_t size_at(const at::Tensor& tensor, int64_t dim) {
  return tensor.dim() == 0 ? 1 : tensor.size(dim);
}

int64_t stride_at(const at::Tensor& tensor, int64_t dim) {
  return tensor.dim() == 0 ? 1 : tensor.stride(dim);
}

c10::DimVector base_strides(const at::Tensor& tensor, int64_t rank, int64_t dim) {
  c10::DimVector strides(rank, 0);
  if (tensor.dim() != rank) return strides;
  for (int64_t d = 0; d < rank; ++d) strides[d] = d == dim ? 0 : tensor.stride(d);
  return strides;
}

at::Tensor on_device(const at::Tensor& tensor, const at::Tensor& like) {
  return tensor.device() == like.device() ? tensor : tensor.to(like.device());
}

void copy_kernel(const char* op_name, c10::IntArrayRef shape, const KernelOperand& destination,
                 const KernelOperand& source) {
  IndexedKernelSpec spec;
  spec.key = "copy";
  spec.body = [](IndexedKernelContext& context) {
    ir::ValueId value = context.load(0);
    if (context.input_dtypes[0] != context.output_dtypes[0]) {
      value = context.builder.cast(value, context.output_dtypes[0]);
    }
    context.builder.store(0, value);
  };
  launch_indexed_kernel(op_name, spec, shape, {source}, {destination});
}

void copy_tensor(const char* op_name, const at::Tensor& destination, const at::Tensor& source) {
  copy_kernel(op_name, destination.sizes(), operand_of(destination), operand_of(source));
}

}  // namespace kiln::torch_integration::compiled
