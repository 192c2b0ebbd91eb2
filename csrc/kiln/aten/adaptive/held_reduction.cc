// A reduction held behind a region's ops, and the fused kernel that runs the
// ops as its prologue (held_region.h, HeldReduction).
#include <algorithm>
#include <utility>

#include "kiln/aten/adaptive/held_region.h"

namespace kiln::torch_integration::adaptive {
// Maps the reduction's index space onto the region's through buffer `buffer`,
// which the reduction reads with `strides` over `sizes` (`rank` dims) from
// element `first` of the buffer. The buffer must be dense over the region
// (its strides, ordered, are the running products of the sizes), so an
// element's offset names one region position: `first` names the origin o.
// Each reduction dim must then step through one region dim by a whole number
// of positions, and the steps of the dims sharing a region dim must stay
// inside it: position x of the reduction reads what the region stored at
// c[i] = o[i] + the sum of x[k] * step[k] over the dims k in region dim i,
// whose offset sum(c[i] * buffer stride[i]) is the reduction's own
// first + sum(x[k] * strides[k]). Any buffer's element at c is then at its
// sum(o[i] * stride[i]) plus sum(x[k] * step[k] * stride[i]): its origin and
// strides over the reduction's dims.
static bool map_index_space(const Buffer& buffer, const int64_t* region_sizes, int region_rank, int64_t first,
                            const int64_t* strides, const int64_t* sizes, int rank, HeldReduction& held) {
  int order[ir::kMaxRank];
  int dims = 0;
  for (int dim = 0; dim < region_rank; ++dim) {
    if (region_sizes[dim] > 1) order[dims++] = dim;
  }
  // By stride (an insertion sort: at most kMaxRank dims, and GCC 12 warns
  // about std::sort's unrolled paths on so small an array).
  for (int index = 1; index < dims; ++index) {
    for (int at = index; at > 0 && buffer.strides[order[at]] < buffer.strides[order[at - 1]]; --at) {
      std::swap(order[at], order[at - 1]);
    }
  }
  int64_t expected = 1;
  for (int index = 0; index < dims; ++index) {
    if (buffer.strides[order[index]] != expected) return false;
    expected *= region_sizes[order[index]];
  }
  int64_t reach[ir::kMaxRank] = {};
  if (first < 0 || first >= expected) return false;
  for (int index = dims - 1; index >= 0; --index) {
    const int region_dim = order[index];
    held.region_origin[region_dim] = first / buffer.strides[region_dim];
    reach[region_dim] = held.region_origin[region_dim];
    first %= buffer.strides[region_dim];
  }
  for (int dim = 0; dim < rank; ++dim) {
    held.region_dim[dim] = -1;
    held.region_step[dim] = 0;
    if (sizes[dim] <= 1 || strides[dim] == 0) continue;  // one element, or the same one again
    if (strides[dim] < 0) return false;
    int found = -1;
    for (int index = 0; index < dims && found < 0; ++index) {
      const int region_dim = order[index];
      const int64_t stride = buffer.strides[region_dim];
      if (stride <= strides[dim] && strides[dim] / stride < region_sizes[region_dim]) found = region_dim;
    }
    if (found < 0 || strides[dim] % buffer.strides[found] != 0) return false;
    held.region_dim[dim] = found;
    held.region_step[dim] = strides[dim] / buffer.strides[found];
    reach[found] += (sizes[dim] - 1) * held.region_step[dim];
  }
  for (int dim = 0; dim < region_rank; ++dim) {
    if (reach[dim] >= std::max<int64_t>(region_sizes[dim], 1)) return false;
  }
  return true;
}

bool HeldRegion::try_add_reduction(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
                                   const LaunchArgs& args, const compiled::LaunchShape& shape, int rank,
                                   int input_count, c10::ArrayRef<at::Tensor> operands) {
  if (ops_.empty() || reduction_ || !op->fusable) return false;
  const ir::Kernel& kernel = op->kernel;
  if (static_cast<int>(kernel.inputs.size()) != input_count ||
      kernel.inputs.size() + kernel.outputs.size() != operands.size()) {
    return false;
  }
  if (scalars_ + kernel.scalars.size() > static_cast<size_t>(ir::kMaxScalars)) return false;
  HeldReduction held;
  held.op_name = op_name;
  held.entry = entry;
  held.args = args;
  held.shape = shape;
  held.rank = rank;
  int mapped = -1;  // the first input read from a buffer the ops wrote
  for (int index = 0; index < static_cast<int>(operands.size()); ++index) {
    const bool output = index >= input_count;
    const ir::DType dtype = output ? kernel.outputs[index - input_count].dtype : kernel.inputs[index].dtype;
    uintptr_t begin = 0, end = 0;
    byte_span(args.data[index], dtype, args.strides[index], args.sizes, rank, begin, end);
    int source = -1;
    for (size_t buffer = 0; buffer < buffers_.size(); ++buffer) {
      if (!overlaps(buffers_[buffer], begin, end)) continue;
      // The reduction stores after the ops' loads of the same position have
      // run in the fused kernel, but not after those of other positions.
      if (output) return false;
      if (!buffers_[buffer].written) continue;  // both only read it
      if (source >= 0) return false;
      source = static_cast<int>(buffer);
    }
    if (output) continue;
    if (source >= 0) {
      const Buffer& buffer = buffers_[source];
      const int64_t element = ir::dtype_size(dtype);
      const std::ptrdiff_t bytes = args.data[index] - buffer.data;
      if (buffer.dtype != dtype || bytes % element != 0) return false;
      if (mapped < 0) {
        if (!map_index_space(buffer, sizes_, rank_, bytes / element, args.strides[index], args.sizes, rank, held)) {
          return false;
        }
        mapped = index;
      } else if (args.data[index] != args.data[mapped] ||
                 !std::equal(args.strides[index], args.strides[index] + rank, args.strides[mapped])) {
        return false;
      }
    }
    held.sources.push_back(source);
  }
  if (mapped < 0) return false;
  int kernel_operands = static_cast<int>(kernel.outputs.size());
  for (const Buffer& buffer : buffers_) kernel_operands += buffer.external ? 1 : 0;
  for (int source : held.sources) kernel_operands += source < 0 ? 1 : 0;
  if (kernel_operands > ir::kMaxOperands) return false;

  // Keep every operand's storage until the work has run (one hold each: the
  // inputs read from the region share its buffers' storages).
  for (const at::Tensor& operand : operands) {
    const c10::StorageImpl* impl = operand.storage().unsafeGetStorageImpl();
    const bool held_already = std::any_of(storages_.begin(), storages_.end(), [&](const c10::Storage& storage) {
      return storage.unsafeGetStorageImpl() == impl;
    });
    if (!held_already) storages_.push_back(operand.storage());
  }
  if (kernel.outputs.size() == 1) {
    const c10::StorageImpl* impl = operands[input_count].storage().unsafeGetStorageImpl();
    HeldReduction::Value output;
    output.data = args.data[input_count];
    output.dtype = kernel.outputs[0].dtype;
    for (size_t index = 0; index < storages_.size(); ++index) {
      if (storages_[index].unsafeGetStorageImpl() == impl) output.storage = static_cast<int>(index);
    }
    held.values.push_back(output);
  }
  held.op = std::move(op);
  reduction_ = std::move(held);
  return true;
}

bool HeldRegion::try_add_epilogue(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
                                  const LaunchArgs& args, const compiled::LaunchShape& shape,
                                  const at::TensorIteratorBase& iter) {
  HeldReduction& held = *reduction_;
  const ir::Kernel& kernel = op->kernel;
  if (!op->fusable || held.values.empty() || held.epilogue.size() >= kMaxOps) return false;
  if (shape.positions != held.shape.positions) return false;
  const int scalar_count = static_cast<int>(kernel.scalars.size());
  const int reduction_scalars = static_cast<int>(held.op->kernel.scalars.size());
  if (scalars_ + reduction_scalars + held.epilogue_scalars + scalar_count > ir::kMaxScalars) return false;
  const c10::SmallVector<int, 8> tensor_of = operand_tensors(iter);
  const size_t inputs = kernel.inputs.size();
  if (tensor_of.size() != inputs + kernel.outputs.size() || inputs == 0) return false;
  const int rank = iter.ndim();
  HeldOp added;
  added.op_name = op_name;
  added.entry = entry;
  added.args = args;
  added.shape = shape;
  added.first_scalar = held.epilogue_scalars;
  std::vector<HeldReduction::Value> new_values;
  std::vector<c10::Storage> new_storages;
  for (size_t operand = 0; operand < tensor_of.size(); ++operand) {
    for (int dim = 0; dim < rank; ++dim) {
      if (args.sizes[dim] > 1 && args.strides[operand][dim] != args.strides[0][dim]) return false;
    }
    const bool writes = operand >= inputs;
    const ir::DType dtype = writes ? kernel.outputs[operand - inputs].dtype : kernel.inputs[operand].dtype;
    int value = -1;
    for (size_t index = 0; index < held.values.size() && value < 0; ++index) {
      if (held.values[index].data == args.data[operand] && held.values[index].dtype == dtype) {
        value = static_cast<int>(index);
      }
    }
    if (value < 0 && !writes) return false;  // reads a tensor other than the reduction's results
    if (value >= 0) {
      // The same elements as the value: both spans one dense block of the
      // output's size (each covers `positions` distinct elements).
      const int output = static_cast<int>(held.sources.size());
      uintptr_t begin = 0, end = 0, value_begin = 0, value_end = 0;
      byte_span(args.data[operand], dtype, args.strides[operand], args.sizes, rank, begin, end);
      byte_span(held.values[value].data, dtype, held.args.strides[output], held.args.sizes, held.rank, value_begin,
                value_end);
      if (begin != value_begin || end != value_end ||
          end - begin != static_cast<uintptr_t>(held.shape.positions * ir::dtype_size(dtype))) {
        return false;
      }
    }
    if (value < 0) {
      // A new tensor: it may not overlap anything the region touches.
      uintptr_t begin = 0, end = 0;
      byte_span(args.data[operand], dtype, args.strides[operand], args.sizes, rank, begin, end);
      for (const Buffer& buffer : buffers_) {
        if (overlaps(buffer, begin, end)) return false;
      }
      // Nor what the reduction reads: later rows would read the new values.
      for (size_t input = 0; input < held.sources.size(); ++input) {
        uintptr_t input_begin = 0, input_end = 0;
        byte_span(held.args.data[input], held.op->kernel.inputs[input].dtype, held.args.strides[input],
                  held.args.sizes, held.rank, input_begin, input_end);
        if (input_begin < end && begin < input_end) return false;
      }
      const int output = static_cast<int>(held.sources.size());
      for (const HeldReduction::Value& other : held.values) {
        uintptr_t other_begin = 0, other_end = 0;
        byte_span(other.data, other.dtype, held.args.strides[output], held.args.sizes, held.rank, other_begin,
                  other_end);
        if (other_begin < end && begin < other_end) return false;
      }
      HeldReduction::Value created;
      created.data = args.data[operand];
      created.dtype = dtype;
      created.storage = storage_index(iter.tensor_base(tensor_of[operand]).storage(), new_storages);
      value = static_cast<int>(held.values.size() + new_values.size());
      new_values.push_back(created);
    }
    added.buffers.push_back(value);
  }
  // Every stored value is an output of the fused kernel beside the
  // region's inputs and the reduction's own operands.
  int operands = static_cast<int>(held.values.size() + new_values.size());
  for (const Buffer& buffer : buffers_) operands += buffer.external ? 1 : 0;
  for (int source : held.sources) operands += source < 0 ? 1 : 0;
  if (operands > ir::kMaxOperands) return false;
  for (HeldReduction::Value& value : new_values) held.values.push_back(value);
  for (c10::Storage& storage : new_storages) storages_.push_back(std::move(storage));
  held.epilogue_scalars += scalar_count;
  added.op = std::move(op);
  held.epilogue.push_back(std::move(added));
  return true;
}

std::vector<bool> HeldRegion::stored_values() const {
  const HeldReduction& held = *reduction_;
  std::vector<bool> stored(held.values.size(), false);
  bool any = false;
  for (size_t index = 0; index < held.values.size(); ++index) {
    stored[index] = storages_[held.values[index].storage].use_count() > 1;
    any = any || stored[index];
  }
  if (!any && !stored.empty()) stored[0] = true;
  if (held.epilogue.empty() && !stored.empty()) stored[0] = true;  // as the reduction alone stores it
  return stored;
}

void HeldRegion::reduction_strides(const Buffer& buffer, int64_t* strides) const {
  const HeldReduction& held = *reduction_;
  for (int dim = 0; dim < held.rank; ++dim) {
    strides[dim] = held.region_dim[dim] < 0 ? 0 : held.region_step[dim] * buffer.strides[held.region_dim[dim]];
  }
}

char* HeldRegion::reduction_data(const Buffer& buffer) const {
  int64_t offset = 0;
  for (int dim = 0; dim < rank_; ++dim) offset += reduction_->region_origin[dim] * buffer.strides[dim];
  return buffer.data + offset * ir::dtype_size(buffer.dtype);
}

ir::Layout reduction_layout(const ir::Kernel& kernel, const LaunchArgs& args, const int64_t* strides) {
  const int dim = kernel.reduction.inner ? kernel.kept_rank : 0;
  return compiled::layout_class(strides[dim], args.sizes[dim]);
}

std::string HeldRegion::reduction_key(const std::vector<bool>& stored_values) const {
  const HeldReduction& held = *reduction_;
  std::string key = this->key(std::vector<bool>(buffers_.size(), false));
  key += "|reduce|";
  key += held.op->signature;
  key += '(';
  for (int source : held.sources) key += std::to_string(source) + ',';
  key += ")|";
  int64_t strides[ir::kMaxRank];
  for (const Buffer& buffer : buffers_) {
    if (!buffer.external) continue;
    reduction_strides(buffer, strides);
    key += static_cast<char>(reduction_layout(held.op->kernel, held.args, strides));
  }
  for (const HeldOp& op : held.epilogue) {
    key += "|epilogue|" + op.op->signature + '(';
    for (int value : op.buffers) key += std::to_string(value) + ',';
    key += ')';
  }
  key += "|v";
  for (bool store : stored_values) key += store ? '1' : '0';
  return key;
}

ir::Kernel HeldRegion::fused_reduction_kernel(const std::vector<bool>& stored_values) const {
  const HeldReduction& held = *reduction_;
  const ir::Kernel& kernel = held.op->kernel;
  ir::Builder builder("adaptive_reduction", ir::KernelKind::kReduction, held.rank);
  std::vector<int> input_of, own_input;
  add_reduction_operands(builder, input_of, own_input);
  const std::vector<ir::ValueId> ids = reduction_nodes(builder, replay_ops(builder, input_of), own_input);
  builder.reduce(kernel.reduction.op, ids[kernel.reduction.input], kernel.kept_rank, kernel.reduction.inner);
  if (held.values.empty()) {
    for (size_t output = 0; output < kernel.outputs.size(); ++output) {
      builder.store(builder.add_output(kernel.outputs[output].dtype, kernel.outputs[output].layout),
                    ids[kernel.results[output]]);
    }
    return builder.finish();
  }
  const std::vector<ir::ValueId> value_of = epilogue_values(builder, ids);
  for (size_t value = 0; value < held.values.size(); ++value) {
    if (!stored_values[value]) continue;
    builder.store(builder.add_output(held.values[value].dtype, kernel.outputs[0].layout), value_of[value]);
  }
  return builder.finish();
}

void HeldRegion::add_reduction_operands(ir::Builder& builder, std::vector<int>& input_of,
                                        std::vector<int>& own_input) const {
  const HeldReduction& held = *reduction_;
  const ir::Kernel& kernel = held.op->kernel;
  input_of.assign(buffers_.size(), -1);
  int64_t strides[ir::kMaxRank];
  for (size_t index = 0; index < buffers_.size(); ++index) {
    if (!buffers_[index].external) continue;
    reduction_strides(buffers_[index], strides);
    input_of[index] = builder.add_input(buffers_[index].dtype, reduction_layout(kernel, held.args, strides));
  }
  own_input.assign(kernel.inputs.size(), -1);
  for (size_t input = 0; input < kernel.inputs.size(); ++input) {
    if (held.sources[input] < 0) own_input[input] = builder.add_input(kernel.inputs[input].dtype, kernel.inputs[input].layout);
  }
  for (const HeldOp& op : ops_) {
    for (ir::DType dtype : op.op->kernel.scalars) builder.add_scalar(dtype);
  }
  for (ir::DType dtype : kernel.scalars) builder.add_scalar(dtype);
  for (const HeldOp& op : held.epilogue) {
    for (ir::DType dtype : op.op->kernel.scalars) builder.add_scalar(dtype);
  }
}

std::vector<ir::ValueId> HeldRegion::reduction_nodes(ir::Builder& builder, const std::vector<ir::ValueId>& written,
                                                     const std::vector<int>& own_input) const {
  const HeldReduction& held = *reduction_;
  // The loads of the ops' results read the values the ops computed, rounded
  // to the buffer's dtype as a store and a load would round them.
  return copy_kernel_nodes(builder, held.op->kernel, [&](int input) {
    const int source = held.sources[input];
    return source >= 0 ? builder.cast(written[source], buffers_[source].dtype) : builder.load(own_input[input]);
  }, scalars_);
}

std::vector<ir::ValueId> HeldRegion::epilogue_values(ir::Builder& builder,
                                                     const std::vector<ir::ValueId>& reduction_ids) const {
  const HeldReduction& held = *reduction_;
  const ir::Kernel& kernel = held.op->kernel;
  // The epilogue ops, per output element: each value handed over as its
  // store and load would round it, as in the region.
  std::vector<ir::ValueId> value_of(held.values.size(), ir::kNoValue);
  value_of[0] = reduction_ids[kernel.results[0]];
  const int epilogue_slot = scalars_ + static_cast<int>(kernel.scalars.size());
  for (const HeldOp& op : held.epilogue) {
    const ir::Kernel& op_kernel = op.op->kernel;
    const std::vector<ir::ValueId> op_ids = copy_kernel_nodes(builder, op_kernel, [&](int input) {
      const int value = op.buffers[input];
      return builder.cast(value_of[value], held.values[value].dtype);
    }, epilogue_slot + op.first_scalar);
    const size_t inputs = op_kernel.inputs.size();
    for (size_t output = 0; output < op_kernel.outputs.size(); ++output) {
      value_of[op.buffers[inputs + output]] = op_ids[op_kernel.results[output]];
    }
  }
  return value_of;
}

int HeldRegion::reduction_operand_args(LaunchArgs& args, compiled::LaunchShape& shape) const {
  const HeldReduction& held = *reduction_;
  const ir::Kernel& kernel = held.op->kernel;
  shape = held.shape;
  int operand = 0;
  for (const Buffer& buffer : buffers_) {
    if (!buffer.external) continue;
    args.data[operand] = reduction_data(buffer);
    reduction_strides(buffer, args.strides[operand]);
    shape.bytes += static_cast<size_t>(ops_.front().shape.positions) * ir::dtype_size(buffer.dtype);
    ++operand;
  }
  for (size_t input = 0; input < kernel.inputs.size(); ++input) {
    if (held.sources[input] < 0) add_own_operand(args, static_cast<int>(input), operand);
  }
  std::copy(held.args.sizes, held.args.sizes + held.rank, args.sizes);
  copy_scalars(args);
  std::copy(held.args.scalars, held.args.scalars + kernel.scalars.size(), args.scalars + scalars_);
  const int epilogue_slot = scalars_ + static_cast<int>(kernel.scalars.size());
  for (const HeldOp& op : held.epilogue) {
    const size_t scalars = op.op->kernel.scalars.size();
    std::copy(op.args.scalars, op.args.scalars + scalars, args.scalars + epilogue_slot + op.first_scalar);
  }
  return operand;
}

void HeldRegion::add_own_operand(LaunchArgs& args, int index, int& operand) const {
  const HeldReduction& held = *reduction_;
  args.data[operand] = held.args.data[index];
  std::copy(held.args.strides[index], held.args.strides[index] + held.rank, args.strides[operand]);
  ++operand;
}

void HeldRegion::add_value_operand(LaunchArgs& args, int value, int& operand) const {
  const HeldReduction& held = *reduction_;
  const int output = static_cast<int>(held.sources.size());
  args.data[operand] = held.values[value].data;
  std::copy(held.args.strides[output], held.args.strides[output] + held.rank, args.strides[operand]);
  ++operand;
}

LaunchArgs HeldRegion::fused_reduction_args(const std::vector<bool>& stored_values,
                                            compiled::LaunchShape& shape) const {
  const HeldReduction& held = *reduction_;
  const int inputs = static_cast<int>(held.op->kernel.inputs.size());
  LaunchArgs args{};
  int operand = reduction_operand_args(args, shape);
  if (held.values.empty()) {
    for (size_t output = 0; output < held.op->kernel.outputs.size(); ++output) {
      add_own_operand(args, inputs + static_cast<int>(output), operand);
    }
  } else {
    for (size_t value = 0; value < held.values.size(); ++value) {
      if (stored_values[value]) add_value_operand(args, static_cast<int>(value), operand);
    }
  }
  return args;
}

}  // namespace kiln::torch_integration::adaptive
