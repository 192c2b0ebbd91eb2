// Row ops behind a held reduction, and the row kernel that folds each row as
// the reduction does and then computes them along it (held_region.h,
// HeldReduction::row_ops).
#include <algorithm>
#include <utility>

#include "kiln/aten/adaptive/held_region.h"

namespace kiln::torch_integration::adaptive {
namespace {

using RowOperand = HeldReduction::RowOperand;
using RowTensor = HeldReduction::RowTensor;

bool same_strides_over(const int64_t* strides, const int64_t* expected, const int64_t* sizes, int rank) {
  for (int dim = 0; dim < rank; ++dim) {
    if (sizes[dim] > 1 && strides[dim] != expected[dim]) return false;
  }
  return true;
}

// Where each kernel dim is in the op's index space, found through an
// operand the kernel knows: it steps `known` over the kernel's dims and
// `op_strides` over the op's. One op dim may cover several kernel dims (the
// op's iterator merged them: a row op on a contiguous tensor alone), in
// order of the operand's strides: kernel dim k is then op dim dim_of[k]
// moved by factor[k] positions per step, the product of the sizes of the
// kernel dims it covers before k. Every dim of more than one element must be
// covered exactly, so op position and kernel position name the same element
// of every operand (a kernel dim of one element gets -1).
bool map_row_dims(const int64_t* known, const int64_t* kernel_sizes, int kernel_rank, const int64_t* op_strides,
                  const int64_t* op_sizes, int op_rank, int* dim_of, int64_t* factor) {
  int kernel_order[ir::kMaxRank], op_order[ir::kMaxRank];
  int kernel_dims = 0, op_dims = 0;
  for (int dim = 0; dim < kernel_rank; ++dim) {
    dim_of[dim] = -1;
    factor[dim] = 0;
    if (kernel_sizes[dim] <= 1) continue;
    if (known[dim] <= 0) return false;
    kernel_order[kernel_dims++] = dim;
  }
  for (int dim = 0; dim < op_rank; ++dim) {
    if (op_sizes[dim] <= 1) continue;
    if (op_strides[dim] <= 0) return false;
    op_order[op_dims++] = dim;
  }
  // By stride (insertion sorts: at most kMaxRank dims).
  auto sort = [](int* order, int count, const int64_t* strides) {
    for (int index = 1; index < count; ++index) {
      for (int at = index; at > 0 && strides[order[at]] < strides[order[at - 1]]; --at) {
        std::swap(order[at], order[at - 1]);
      }
    }
  };
  sort(kernel_order, kernel_dims, known);
  sort(op_order, op_dims, op_strides);
  int next = 0;
  for (int index = 0; index < op_dims; ++index) {
    const int op_dim = op_order[index];
    int64_t covered = 1;
    while (covered < op_sizes[op_dim]) {
      if (next >= kernel_dims) return false;
      const int dim = kernel_order[next++];
      if (known[dim] != op_strides[op_dim] * covered) return false;
      dim_of[dim] = op_dim;
      factor[dim] = covered;
      covered *= kernel_sizes[dim];
    }
    if (covered != op_sizes[op_dim]) return false;
  }
  return next == kernel_dims;
}

bool spans_overlap(uintptr_t begin, uintptr_t end, uintptr_t other_begin, uintptr_t other_end) {
  return other_begin < end && begin < other_end;
}

}  // namespace

bool HeldRegion::try_add_row_op(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
                                const LaunchArgs& args, const compiled::LaunchShape& shape,
                                const at::TensorIteratorBase& iter) {
  HeldReduction& held = *reduction_;
  const ir::Kernel& kernel = op->kernel;
  const ir::Kernel& reduction = held.op->kernel;
  if (!op->fusable || held.values.empty() || held.row_ops.size() >= kMaxOps) return false;
  if (!reduction.reduction.inner || reduction.kept_rank >= held.rank) return false;
  const int scalar_count = static_cast<int>(kernel.scalars.size());
  if (scalars_ + static_cast<int>(reduction.scalars.size()) + held.epilogue_scalars + held.row_scalars +
          scalar_count > ir::kMaxScalars) {
    return false;
  }
  const c10::SmallVector<int, 8> tensor_of = operand_tensors(iter);
  const size_t inputs = kernel.inputs.size();
  if (tensor_of.size() != inputs + kernel.outputs.size() || inputs == 0) return false;
  const int op_rank = iter.ndim();
  const int rank = held.rank;
  const int64_t* sizes = held.args.sizes;
  const int value_operand = static_cast<int>(held.sources.size());  // the reduction's output in held.args
  auto input_dtype = [&](size_t operand) {
    return operand >= inputs ? kernel.outputs[operand - inputs].dtype : kernel.inputs[operand].dtype;
  };

  // The op's positions as the reduction's, through an operand the kernel
  // knows: a region buffer or a row tensor.
  int dim_of[ir::kMaxRank];
  int64_t factor[ir::kMaxRank];
  bool mapped = false;
  for (size_t operand = 0; operand < inputs && !mapped; ++operand) {
    const ir::DType dtype = input_dtype(operand);
    int64_t known[ir::kMaxRank] = {};
    bool found = false;
    for (const Buffer& buffer : buffers_) {
      if (found || buffer.dtype != dtype || reduction_data(buffer) != args.data[operand]) continue;
      reduction_strides(buffer, known);
      found = true;
    }
    for (const RowTensor& tensor : held.row_tensors) {
      if (found || tensor.dtype != dtype || tensor.data != args.data[operand]) continue;
      std::copy(tensor.strides, tensor.strides + rank, known);
      found = true;
    }
    mapped = found && map_row_dims(known, sizes, rank, args.strides[operand], args.sizes, op_rank, dim_of, factor);
  }
  if (!mapped) return false;

  // What each operand is, over the kernel's dims.
  std::vector<RowTensor> tensors = held.row_tensors;  // with the new ones
  std::vector<c10::Storage> new_storages;
  c10::SmallVector<RowOperand, 6> operands;
  int64_t strides[ir::kMaxRank] = {};
  int64_t expected[ir::kMaxRank] = {};
  for (size_t operand = 0; operand < tensor_of.size(); ++operand) {
    const bool writes = operand >= inputs;
    const ir::DType dtype = input_dtype(operand);
    char* data = args.data[operand];
    for (int dim = 0; dim < rank; ++dim) {
      strides[dim] = dim_of[dim] >= 0 ? args.strides[operand][dim_of[dim]] * factor[dim] : 0;
    }
    uintptr_t begin = 0, end = 0;
    byte_span(data, dtype, strides, sizes, rank, begin, end);
    RowOperand reference;
    bool known = false;
    if (!writes) {
      for (size_t index = 0; index < buffers_.size() && !known; ++index) {
        const Buffer& buffer = buffers_[index];
        if (buffer.dtype != dtype || reduction_data(buffer) != data) continue;
        reduction_strides(buffer, expected);
        if (!same_strides_over(strides, expected, sizes, rank)) continue;
        reference = RowOperand{RowOperand::kBuffer, static_cast<int>(index)};
        known = true;
      }
      for (size_t index = 0; index < held.values.size() && !known; ++index) {
        const HeldReduction::Value& value = held.values[index];
        if (value.dtype != dtype || value.data != data ||
            !same_strides_over(strides, held.args.strides[value_operand], sizes, rank)) {
          continue;
        }
        reference = RowOperand{RowOperand::kValue, static_cast<int>(index)};
        known = true;
      }
    }
    for (size_t index = 0; index < tensors.size() && !known; ++index) {
      const RowTensor& tensor = tensors[index];
      if (tensor.dtype != dtype || tensor.data != data || !same_strides_over(strides, tensor.strides, sizes, rank)) {
        continue;
      }
      // A row op may rewrite what a row op wrote, not a tensor the kernel loads.
      if (writes && !tensor.written) return false;
      reference = RowOperand{RowOperand::kTensor, static_cast<int>(index)};
      known = true;
    }
    if (!known) {
      // New memory: what it reads nothing in the kernel writes; what it
      // writes nothing in the kernel touches.
      for (const Buffer& buffer : buffers_) {
        if ((writes || buffer.written) && overlaps(buffer, begin, end)) return false;
      }
      for (size_t input = 0; writes && input < held.sources.size(); ++input) {
        uintptr_t input_begin = 0, input_end = 0;
        byte_span(held.args.data[input], reduction.inputs[input].dtype, held.args.strides[input], held.args.sizes,
                  held.rank, input_begin, input_end);
        if (spans_overlap(begin, end, input_begin, input_end)) return false;
      }
      for (const HeldReduction::Value& value : held.values) {
        uintptr_t value_begin = 0, value_end = 0;
        byte_span(value.data, value.dtype, held.args.strides[value_operand], sizes, rank, value_begin, value_end);
        if (spans_overlap(begin, end, value_begin, value_end)) return false;
      }
      for (const RowTensor& tensor : tensors) {
        if ((writes || tensor.written) && spans_overlap(begin, end, tensor.begin, tensor.end)) return false;
      }
      RowTensor created;
      created.data = data;
      created.dtype = dtype;
      std::copy(strides, strides + rank, created.strides);
      created.begin = begin;
      created.end = end;
      created.written = writes;
      created.storage = storage_index(iter.tensor_base(tensor_of[operand]).storage(), new_storages);
      reference = RowOperand{RowOperand::kTensor, static_cast<int>(tensors.size())};
      tensors.push_back(created);
    }
    operands.push_back(reference);
  }
  // An op that reads nothing the kernel computes (only tensors it loads)
  // does not join: it begins another chain (the next call's `x.pow(2)`),
  // which the next region, with its own reduction, fuses.
  bool depends = false;
  for (size_t operand = 0; operand < inputs; ++operand) {
    const RowOperand& reference = operands[operand];
    depends = depends || reference.kind == RowOperand::kValue ||
              (reference.kind == RowOperand::kBuffer && buffers_[reference.index].written) ||
              (reference.kind == RowOperand::kTensor && tensors[reference.index].written);
  }
  if (!depends) return false;
  // At most every operand the kernel may have: each region buffer loaded
  // and stored, the reduction's own inputs, every value and row tensor.
  int kernel_operands = static_cast<int>(held.values.size() + tensors.size());
  for (const Buffer& buffer : buffers_) kernel_operands += (buffer.external ? 1 : 0) + (buffer.written ? 1 : 0);
  for (int source : held.sources) kernel_operands += source < 0 ? 1 : 0;
  if (kernel_operands > ir::kMaxOperands) return false;

  held.row_tensors = std::move(tensors);
  for (c10::Storage& storage : new_storages) storages_.push_back(std::move(storage));
  HeldReduction::RowOp added;
  added.launch.op_name = op_name;
  added.launch.entry = entry;
  added.launch.args = args;
  added.launch.shape = shape;
  added.launch.first_scalar = held.row_scalars;
  added.launch.op = std::move(op);
  added.operands = std::move(operands);
  held.row_scalars += scalar_count;
  held.row_ops.push_back(std::move(added));
  return true;
}

HeldRegion::RowStores HeldRegion::row_stores() const {
  const HeldReduction& held = *reduction_;
  RowStores stores;
  stores.buffers = stored_buffers();
  bool any = std::find(stores.buffers.begin(), stores.buffers.end(), true) != stores.buffers.end();
  stores.values.assign(held.values.size(), false);
  for (size_t index = 0; index < held.values.size(); ++index) {
    stores.values[index] = storages_[held.values[index].storage].use_count() > 1;
    any = any || stores.values[index];
  }
  stores.tensors.assign(held.row_tensors.size(), false);
  for (size_t index = 0; index < held.row_tensors.size(); ++index) {
    const RowTensor& tensor = held.row_tensors[index];
    stores.tensors[index] = tensor.written && storages_[tensor.storage].use_count() > 1;
    any = any || stores.tensors[index];
  }
  if (!any) stores.values[0] = true;  // a kernel stores something
  return stores;
}

namespace {

char flag(bool value) { return value ? '1' : '0'; }

}  // namespace

std::string HeldRegion::row_key(const RowStores& stores) const {
  const HeldReduction& held = *reduction_;
  const ir::Kernel& reduction = held.op->kernel;
  std::string key = reduction_key(stores.values);
  key += "|b";
  int64_t strides[ir::kMaxRank];
  for (size_t index = 0; index < buffers_.size(); ++index) {
    key += flag(stores.buffers[index]);
    if (!stores.buffers[index]) continue;
    reduction_strides(buffers_[index], strides);
    key += static_cast<char>(reduction_layout(reduction, held.args, strides));
  }
  for (const HeldReduction::RowOp& op : held.row_ops) {
    key += "|row|" + op.launch.op->signature + '(';
    for (const RowOperand& operand : op.operands) {
      key += "bvt"[operand.kind];
      key += std::to_string(operand.index) + ',';
    }
    key += ')';
  }
  key += "|t";
  for (size_t index = 0; index < held.row_tensors.size(); ++index) {
    const RowTensor& tensor = held.row_tensors[index];
    key += tensor.written ? (stores.tensors[index] ? 'S' : 'w') : 'r';
    key += static_cast<char>(reduction_layout(reduction, held.args, tensor.strides));
  }
  return key;
}

ir::Kernel HeldRegion::fused_row_kernel(const RowStores& stores) const {
  const HeldReduction& held = *reduction_;
  const ir::Kernel& reduction = held.op->kernel;
  ir::Builder builder("adaptive_row", ir::KernelKind::kRow, held.rank);
  builder.set_kept_rank(reduction.kept_rank);
  std::vector<int> input_of, own_input;
  add_reduction_operands(builder, input_of, own_input);
  std::vector<int> tensor_input(held.row_tensors.size(), -1);
  for (size_t index = 0; index < held.row_tensors.size(); ++index) {
    const RowTensor& tensor = held.row_tensors[index];
    if (!tensor.written) {
      tensor_input[index] = builder.add_input(tensor.dtype, reduction_layout(reduction, held.args, tensor.strides));
    }
  }
  for (const HeldReduction::RowOp& op : held.row_ops) {
    for (ir::DType dtype : op.launch.op->kernel.scalars) builder.add_scalar(dtype);
  }
  const std::vector<ir::ValueId> written = replay_ops(builder, input_of);
  const std::vector<ir::ValueId> ids = reduction_nodes(builder, written, own_input);
  builder.reduce_stage(reduction.reduction.op, ids[reduction.reduction.input]);
  const std::vector<ir::ValueId> value_of = epilogue_values(builder, ids);

  // The row ops at each element, each operand as a store and a load would
  // hand it over.
  std::vector<ir::ValueId> tensor_value(held.row_tensors.size(), ir::kNoValue);
  auto operand_value = [&](const RowOperand& operand) -> ir::ValueId {
    if (operand.kind == RowOperand::kValue) {
      return builder.cast(value_of[operand.index], held.values[operand.index].dtype);
    }
    if (operand.kind == RowOperand::kBuffer) {
      const Buffer& buffer = buffers_[operand.index];
      return written[operand.index] != ir::kNoValue ? builder.cast(written[operand.index], buffer.dtype)
                                                    : builder.load(input_of[operand.index]);
    }
    const RowTensor& tensor = held.row_tensors[operand.index];
    return tensor_value[operand.index] != ir::kNoValue ? builder.cast(tensor_value[operand.index], tensor.dtype)
                                                       : builder.load(tensor_input[operand.index]);
  };
  const int row_slot = scalars_ + static_cast<int>(reduction.scalars.size()) + held.epilogue_scalars;
  for (const HeldReduction::RowOp& op : held.row_ops) {
    const ir::Kernel& op_kernel = op.launch.op->kernel;
    const std::vector<ir::ValueId> op_ids = copy_kernel_nodes(builder, op_kernel, [&](int input) {
      return operand_value(op.operands[input]);
    }, row_slot + op.launch.first_scalar);
    const size_t inputs = op_kernel.inputs.size();
    for (size_t output = 0; output < op_kernel.outputs.size(); ++output) {
      tensor_value[op.operands[inputs + output].index] = op_ids[op_kernel.results[output]];
    }
  }

  // Values once per row (broadcast along it); region buffers and row
  // tensors at every element.
  for (size_t index = 0; index < held.values.size(); ++index) {
    if (!stores.values[index]) continue;
    builder.store(builder.add_output(held.values[index].dtype, ir::Layout::kBroadcast), value_of[index]);
  }
  int64_t strides[ir::kMaxRank];
  for (size_t index = 0; index < buffers_.size(); ++index) {
    if (!stores.buffers[index]) continue;
    reduction_strides(buffers_[index], strides);
    builder.store(builder.add_output(buffers_[index].dtype, reduction_layout(reduction, held.args, strides)),
                  written[index]);
  }
  for (size_t index = 0; index < held.row_tensors.size(); ++index) {
    if (!stores.tensors[index]) continue;
    const RowTensor& tensor = held.row_tensors[index];
    builder.store(builder.add_output(tensor.dtype, reduction_layout(reduction, held.args, tensor.strides)),
                  tensor_value[index]);
  }
  return builder.finish();
}

LaunchArgs HeldRegion::fused_row_args(const RowStores& stores, compiled::LaunchShape& shape) const {
  const HeldReduction& held = *reduction_;
  LaunchArgs args{};
  int operand = reduction_operand_args(args, shape);
  auto add_tensor = [&](const RowTensor& tensor) {
    args.data[operand] = tensor.data;
    std::copy(tensor.strides, tensor.strides + held.rank, args.strides[operand]);
    shape.bytes += tensor.end - tensor.begin;
    ++operand;
  };
  for (const RowTensor& tensor : held.row_tensors) {
    if (!tensor.written) add_tensor(tensor);
  }
  for (size_t index = 0; index < held.values.size(); ++index) {
    if (stores.values[index]) add_value_operand(args, static_cast<int>(index), operand);
  }
  for (size_t index = 0; index < buffers_.size(); ++index) {
    if (!stores.buffers[index]) continue;
    args.data[operand] = reduction_data(buffers_[index]);
    reduction_strides(buffers_[index], args.strides[operand]);
    shape.bytes += buffers_[index].end - buffers_[index].begin;
    ++operand;
  }
  for (size_t index = 0; index < held.row_tensors.size(); ++index) {
    if (stores.tensors[index]) add_tensor(held.row_tensors[index]);
  }
  const int row_slot = scalars_ + static_cast<int>(held.op->kernel.scalars.size()) + held.epilogue_scalars;
  for (const HeldReduction::RowOp& op : held.row_ops) {
    const size_t scalars = op.launch.op->kernel.scalars.size();
    std::copy(op.launch.args.scalars, op.launch.args.scalars + scalars,
              args.scalars + row_slot + op.launch.first_scalar);
  }
  return args;
}

size_t HeldRegion::row_bytes_not_stored(const RowStores& stores) const {
  const HeldReduction& held = *reduction_;
  size_t bytes = 0;
  for (size_t index = 0; index < held.row_tensors.size(); ++index) {
    const RowTensor& tensor = held.row_tensors[index];
    if (tensor.written && !stores.tensors[index]) bytes += tensor.end - tensor.begin;
  }
  return bytes;
}

}  // namespace kiln::torch_integration::adaptive
