#include "kiln/aten/adaptive/held_region.h"

#include <algorithm>

#include "kiln/ir/builder.h"

namespace kiln::torch_integration::adaptive {
namespace {

bool same_strides(const int64_t* a, const int64_t* b, const int64_t* sizes, int rank) {
  for (int dim = 0; dim < rank; ++dim) {
    if (sizes[dim] > 1 && a[dim] != b[dim]) return false;
  }
  return true;
}

}  // namespace

// The bytes [begin, end) an operand of `dtype` at `data` with `strides`
// touches over `sizes`.
void byte_span(const char* data, ir::DType dtype, const int64_t* strides, const int64_t* sizes, int rank,
               uintptr_t& begin, uintptr_t& end) {
  int64_t low = 0, high = 0;
  for (int dim = 0; dim < rank; ++dim) {
    if (sizes[dim] <= 1) continue;
    const int64_t reach = strides[dim] * (sizes[dim] - 1);
    (reach < 0 ? low : high) += reach;
  }
  const int64_t element = ir::dtype_size(dtype);
  begin = reinterpret_cast<uintptr_t>(data) + low * element;
  end = reinterpret_cast<uintptr_t>(data) + (high + 1) * element;
}

bool overlaps(const Buffer& buffer, uintptr_t begin, uintptr_t end) {
  return buffer.begin < end && begin < buffer.end;
}

std::vector<ir::ValueId> copy_kernel_nodes(ir::Builder& builder, const ir::Kernel& kernel,
                                           c10::function_ref<ir::ValueId(int input)> load, int first_scalar) {
  std::vector<ir::ValueId> ids(kernel.nodes.size(), ir::kNoValue);
  for (size_t index = 0; index < kernel.nodes.size(); ++index) {
    const ir::Node& node = kernel.nodes[index];
    if (node.op == ir::OpCode::kLoad) {
      ids[index] = load(static_cast<int>(node.integer));
    } else if (node.op == ir::OpCode::kScalar) {
      ids[index] = builder.scalar(first_scalar + static_cast<int>(node.integer));
    } else {
      ir::Node copy = node;
      for (ir::ValueId& arg : copy.args) {
        if (arg != ir::kNoValue) arg = ids[arg];
      }
      ids[index] = builder.copy_node(copy);
    }
  }
  return ids;
}

bool calls_libm_by_position(ir::OpCode op) { return ir::opcode_is_special_function(op); }

namespace {

// Loads, launch scalars, constants, arithmetic and routed math over a
// kernel of `kind`, storing each output once at the position (reductions may
// read their accumulator).
bool has_plain_nodes(const ir::Kernel& kernel, ir::KernelKind kind) {
  if (kernel.kind != kind || !kernel.fixed_shape.empty() || kernel.single_threaded) return false;
  if (kernel.results.size() != kernel.outputs.size()) return false;
  for (ir::ValueId offset : kernel.store_offsets) {
    if (offset != ir::kNoValue) return false;
  }
  for (bool accumulates : kernel.store_accumulates) {
    if (accumulates) return false;
  }
  for (const ir::Node& node : kernel.nodes) {
    if (calls_libm_by_position(node.op)) return false;
    switch (node.op) {
      case ir::OpCode::kIndexedLoad:
      case ir::OpCode::kCoordinate:
      case ir::OpCode::kLinearIndex:
      case ir::OpCode::kRandomBits:
        return false;
      case ir::OpCode::kAccumulator:
      case ir::OpCode::kAccumulatorIndex:
        if (kind != ir::KernelKind::kReduction) return false;
        break;
      default:
        break;
    }
  }
  return true;
}

}  // namespace

c10::SmallVector<int, 8> operand_tensors(const at::TensorIteratorBase& iter) {
  c10::SmallVector<int, 8> tensor_of;
  for (int index = iter.noutputs(); index < iter.ntensors(); ++index) {
    if (!iter.is_cpu_scalar(index)) tensor_of.push_back(index);
  }
  for (int index = 0; index < iter.noutputs(); ++index) tensor_of.push_back(index);
  return tensor_of;
}

bool is_fusable(const ir::Kernel& kernel) { return has_plain_nodes(kernel, ir::KernelKind::kPointwise); }

bool is_fusable_reduction(const ir::Kernel& kernel) {
  return has_plain_nodes(kernel, ir::KernelKind::kReduction) && kernel.reduction.op != ir::ReduceOp::kArgMax &&
         kernel.reduction.op != ir::ReduceOp::kArgMin;
}

int HeldRegion::storage_index(const c10::Storage& storage, std::vector<c10::Storage>& new_storages) const {
  const c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  for (size_t index = 0; index < storages_.size(); ++index) {
    if (storages_[index].unsafeGetStorageImpl() == impl) return static_cast<int>(index);
  }
  for (size_t index = 0; index < new_storages.size(); ++index) {
    if (new_storages[index].unsafeGetStorageImpl() == impl) return static_cast<int>(storages_.size() + index);
  }
  new_storages.push_back(storage);
  return static_cast<int>(storages_.size() + new_storages.size() - 1);
}

int HeldRegion::find_or_add_buffer(char* data, ir::DType dtype, const int64_t* strides,
                                   const c10::Storage& storage, bool writes, std::vector<Buffer>& added,
                                   std::vector<c10::Storage>& new_storages, bool& conflict) const {
  uintptr_t begin = 0, end = 0;
  byte_span(data, dtype, strides, sizes_, rank_, begin, end);
  const int existing = static_cast<int>(buffers_.size());
  int match = -1;
  auto visit = [&](const Buffer& buffer, int index) {
    if (!overlaps(buffer, begin, end)) return;
    if (buffer.data == data && buffer.dtype == dtype && same_strides(buffer.strides, strides, sizes_, rank_)) {
      match = index;
      return;
    }
    // Another view of memory the region touches: fine while both only read it.
    if (writes || buffer.written) conflict = true;
  };
  for (int index = 0; index < existing; ++index) visit(buffers_[index], index);
  for (size_t index = 0; index < added.size(); ++index) visit(added[index], existing + static_cast<int>(index));
  if (match >= 0 && writes) {
    // Writing a buffer that was only read: no other view may overlap it.
    for (int index = 0; index < existing + static_cast<int>(added.size()); ++index) {
      const Buffer& other = index < existing ? buffers_[index] : added[index - existing];
      if (index != match && overlaps(other, begin, end)) conflict = true;
    }
  }
  if (match >= 0) return match;

  Buffer buffer;
  buffer.data = data;
  buffer.dtype = dtype;
  std::copy(strides, strides + rank_, buffer.strides);
  buffer.begin = begin;
  buffer.end = end;
  buffer.storage = storage_index(storage, new_storages);
  buffer.external = !writes;
  added.push_back(buffer);
  return existing + static_cast<int>(added.size()) - 1;
}

bool HeldRegion::try_add(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
                         const LaunchArgs& args, const compiled::LaunchShape& shape, int rank,
                         const at::TensorIteratorBase& iter, bool* full) {
  if (reduction_) {
    // An epilogue op while no row op has joined (the epilogue's values are
    // all computed before the row ops run).
    if (reduction_->row_ops.empty() && try_add_epilogue(op_name, op, entry, args, shape, iter)) return true;
    return try_add_row_op(op_name, std::move(op), entry, args, shape, iter);
  }
  const c10::SmallVector<int, 8> tensor_of = operand_tensors(iter);
  return try_add_launch(op_name, std::move(op), entry, args, shape, rank, tensor_of.size(),
                        [&](size_t operand) -> const c10::Storage& {
                          return iter.tensor_base(tensor_of[operand]).storage();
                        }, full);
}

bool HeldRegion::try_add_launch(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
                                const LaunchArgs& args, const compiled::LaunchShape& shape, int rank,
                                size_t operands, OperandStorage storage_of, bool* full) {
  const ir::Kernel& kernel = op->kernel;
  if (!op->fusable || operands != kernel.inputs.size() + kernel.outputs.size()) return false;
  const int scalar_count = static_cast<int>(kernel.scalars.size());
  if (ops_.size() >= kMaxOps || scalars_ + scalar_count > ir::kMaxScalars) {
    if (full != nullptr) *full = true;
    return false;
  }
  if (ops_.empty()) {
    rank_ = rank;
    std::copy(args.sizes, args.sizes + rank, sizes_);
  } else if (rank != rank_ || !std::equal(args.sizes, args.sizes + rank, sizes_)) {
    // Another index space of as many positions: both over their common
    // refinement, if they have one (the region's dims split, its buffers'
    // strides with them; put back if the op does not join).
    int64_t refined[ir::kMaxRank];
    int refined_rank = 0;
    if (!refine_index_spaces(sizes_, rank_, args.sizes, rank, refined, refined_rank)) return false;
    if (refined_rank != rank_) {
      const std::vector<Buffer> before = buffers_;
      const int rank_before = rank_;
      int64_t sizes_before[ir::kMaxRank];
      std::copy(sizes_, sizes_ + rank_, sizes_before);
      for (Buffer& buffer : buffers_) {
        int64_t strides[ir::kMaxRank];
        split_strides(sizes_, rank_, buffer.strides, refined, refined_rank, strides);
        std::copy(strides, strides + refined_rank, buffer.strides);
      }
      rank_ = refined_rank;
      std::copy(refined, refined + refined_rank, sizes_);
      if (try_add_over_region_dims(op_name, std::move(op), entry, args, shape, rank, operands, storage_of, full)) {
        return true;
      }
      buffers_ = before;
      rank_ = rank_before;
      std::copy(sizes_before, sizes_before + rank_before, sizes_);
      return false;
    }
  }
  return try_add_over_region_dims(op_name, std::move(op), entry, args, shape, rank, operands, storage_of, full);
}

bool HeldRegion::try_add_over_region_dims(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
                                          const LaunchArgs& args, const compiled::LaunchShape& shape, int rank,
                                          size_t operands, OperandStorage storage_of, bool* full) {
  const ir::Kernel& kernel = op->kernel;
  const int scalar_count = static_cast<int>(kernel.scalars.size());
  const size_t inputs = kernel.inputs.size();
  // The op's strides over the region's dims (its own dims split where the
  // region's are finer).
  int64_t op_strides[ir::kMaxOperands][ir::kMaxRank];
  for (size_t operand = 0; operand < operands; ++operand) {
    split_strides(args.sizes, rank, args.strides[operand], sizes_, rank_, op_strides[operand]);
  }

  HeldOp held;
  held.op_name = op_name;
  held.entry = entry;
  held.args = args;
  held.shape = shape;
  held.first_scalar = scalars_;
  held.rank = rank;
  std::vector<Buffer> added;
  std::vector<c10::Storage> new_storages;
  bool conflict = false;
  for (size_t operand = 0; operand < operands; ++operand) {
    const bool writes = operand >= inputs;
    const ir::DType dtype = writes ? kernel.outputs[operand - inputs].dtype : kernel.inputs[operand].dtype;
    held.buffers.push_back(find_or_add_buffer(args.data[operand], dtype, op_strides[operand], storage_of(operand),
                                              writes, added, new_storages, conflict));
    if (conflict) return false;
  }
  // The fused kernel's operands: every external buffer, every written one.
  int kernel_operands = 0;
  std::vector<bool> written(buffers_.size() + added.size(), false);
  for (size_t index = 0; index < buffers_.size(); ++index) written[index] = buffers_[index].written;
  for (size_t operand = inputs; operand < held.buffers.size(); ++operand) written[held.buffers[operand]] = true;
  for (size_t index = 0; index < written.size(); ++index) {
    const Buffer& buffer = index < buffers_.size() ? buffers_[index] : added[index - buffers_.size()];
    kernel_operands += (buffer.external ? 1 : 0) + (written[index] ? 1 : 0);
  }
  if (kernel_operands > ir::kMaxOperands) {
    if (full != nullptr) *full = true;
    return false;
  }

  for (Buffer& buffer : added) buffers_.push_back(buffer);
  for (size_t index = 0; index < written.size(); ++index) buffers_[index].written = written[index];
  for (c10::Storage& storage : new_storages) storages_.push_back(std::move(storage));
  scalars_ += scalar_count;
  held.op = std::move(op);
  ops_.push_back(std::move(held));
  return true;
}

HeldRegion HeldRegion::split_independent_tail() {
  const int count = static_cast<int>(ops_.size());
  if (reduction_ || count < 2) return HeldRegion();
  // The first op of the tail: the first after which no op reads a buffer
  // value an op before it wrote (each input's last writer is in the tail,
  // or none). The first, not the last: a chain's own ops may start
  // independent parts (the `0.044715 * x` of a GELU reads only x) that a
  // later op of the chain joins.
  int first = -1;
  for (int candidate = 1; candidate < count && first < 0; ++candidate) {
    bool independent = true;
    std::vector<int> last_writer(buffers_.size(), -1);
    for (int index = 0; index < count && independent; ++index) {
      const HeldOp& op = ops_[index];
      const size_t inputs = op.op->kernel.inputs.size();
      for (size_t operand = 0; index >= candidate && operand < inputs; ++operand) {
        const int writer = last_writer[op.buffers[operand]];
        if (writer >= 0 && writer < candidate) independent = false;
      }
      for (size_t operand = inputs; operand < op.buffers.size(); ++operand) last_writer[op.buffers[operand]] = index;
    }
    if (independent) first = candidate;
  }
  if (first < 0) return HeldRegion();
  // Both rebuilt from their ops (each op fitted the whole region, so it fits
  // either part); should one not, nothing changes.
  HeldRegion head, tail;
  bool rebuilt = true;
  for (int index = 0; index < count && rebuilt; ++index) {
    const HeldOp& op = ops_[index];
    auto storage_of = [&](size_t operand) -> const c10::Storage& {
      return storages_[buffers_[op.buffers[operand]].storage];
    };
    rebuilt = (index < first ? head : tail)
                  .try_add_launch(op.op_name, op.op, op.entry, op.args, op.shape, op.rank, op.buffers.size(),
                                  storage_of, nullptr);
  }
  if (!rebuilt) return HeldRegion();
  *this = std::move(head);
  return tail;
}

bool refine_index_spaces(const int64_t* sizes, int rank, const int64_t* other_sizes, int other_rank,
                         int64_t* refined, int& refined_rank) {
  refined_rank = 0;
  int dim = 0, other_dim = 0;
  int64_t rest = 1, other_rest = 1;  // what is left of the current dims
  while (true) {
    while (rest == 1 && dim < rank) rest = sizes[dim++];
    while (other_rest == 1 && other_dim < other_rank) other_rest = other_sizes[other_dim++];
    if (rest == 1 || other_rest == 1) {  // one used up: both must be
      if (refined_rank == 0) refined[refined_rank++] = 1;  // one position
      return rest == other_rest;
    }
    if (rest <= 0 || other_rest <= 0 || refined_rank == ir::kMaxRank) return false;
    const int64_t step = std::min(rest, other_rest);
    if (std::max(rest, other_rest) % step != 0) return false;
    refined[refined_rank++] = step;
    rest /= step;
    other_rest /= step;
  }
}

void split_strides(const int64_t* sizes, int rank, const int64_t* strides, const int64_t* refined, int refined_rank,
                   int64_t* split) {
  int next = 0;
  for (int dim = 0; dim < rank; ++dim) {
    for (int64_t covered = 1; covered < sizes[dim] && next < refined_rank; covered *= refined[next++]) {
      split[next] = strides[dim] * covered;
    }
  }
  for (; next < refined_rank; ++next) split[next] = 0;
}

bool HeldRegion::writes_no_input() const {
  return std::none_of(buffers_.begin(), buffers_.end(),
                      [](const Buffer& buffer) { return buffer.external && buffer.written; });
}

bool HeldRegion::storage_alive(int index) const {
  return storages_[buffers_[index].storage].use_count() > 1;
}

std::vector<bool> HeldRegion::stored_buffers() const {
  std::vector<bool> stored(buffers_.size(), false);
  for (size_t index = 0; index < buffers_.size(); ++index) {
    stored[index] = buffers_[index].written && storage_alive(static_cast<int>(index));
  }
  return stored;
}

std::string HeldRegion::key(const std::vector<bool>& stored) const {
  std::string key = "adaptive|r" + std::to_string(rank_);
  for (const HeldOp& op : ops_) {
    key += '|';
    key += op.op->signature;
    key += '(';
    for (int buffer : op.buffers) key += std::to_string(buffer) + ',';
    key += ')';
  }
  // Each buffer's layout along dim 0 (the ops' signatures carry their own
  // dim 0's, which the region's refinement may have split).
  key += "|l";
  for (const Buffer& buffer : buffers_) key += static_cast<char>(compiled::layout_class(buffer.strides[0], sizes_[0]));
  key += "|s";
  for (bool store : stored) key += store ? '1' : '0';
  return key;
}

std::vector<ir::ValueId> HeldRegion::replay_ops(ir::Builder& builder, const std::vector<int>& input_of) const {
  const size_t count = buffers_.size();
  // Per buffer: the last value an op stored (in the op's result dtype), and
  // the value a load would read now (rounded to the buffer's dtype).
  std::vector<ir::ValueId> written(count, ir::kNoValue), loaded(count, ir::kNoValue);
  for (const HeldOp& op : ops_) {
    const ir::Kernel& kernel = op.op->kernel;
    const std::vector<ir::ValueId> ids = copy_kernel_nodes(builder, kernel, [&](int input) {
      const int buffer = op.buffers[input];
      if (loaded[buffer] == ir::kNoValue) {
        loaded[buffer] = written[buffer] != ir::kNoValue ? builder.cast(written[buffer], buffers_[buffer].dtype)
                                                         : builder.load(input_of[buffer]);
      }
      return loaded[buffer];
    }, op.first_scalar);
    const size_t inputs = kernel.inputs.size();
    for (size_t output = 0; output < kernel.outputs.size(); ++output) {
      const int buffer = op.buffers[inputs + output];
      written[buffer] = ids[kernel.results[output]];
      loaded[buffer] = ir::kNoValue;
    }
  }
  return written;
}

ir::Kernel HeldRegion::fused_kernel(const std::vector<bool>& stored) const {
  ir::Builder builder("adaptive_region", ir::KernelKind::kPointwise, rank_);
  const size_t count = buffers_.size();
  auto layout = [&](const Buffer& buffer) { return compiled::layout_class(buffer.strides[0], sizes_[0]); };
  std::vector<int> input_of(count, -1);
  for (size_t index = 0; index < count; ++index) {
    if (buffers_[index].external) input_of[index] = builder.add_input(buffers_[index].dtype, layout(buffers_[index]));
  }
  for (const HeldOp& op : ops_) {
    for (ir::DType dtype : op.op->kernel.scalars) builder.add_scalar(dtype);
  }
  const std::vector<ir::ValueId> written = replay_ops(builder, input_of);
  for (size_t index = 0; index < count; ++index) {
    if (stored[index]) builder.store(builder.add_output(buffers_[index].dtype, layout(buffers_[index])), written[index]);
  }
  return builder.finish();
}

void HeldRegion::copy_scalars(LaunchArgs& args) const {
  for (const HeldOp& op : ops_) {
    const size_t scalars = op.op->kernel.scalars.size();
    std::copy(op.args.scalars, op.args.scalars + scalars, args.scalars + op.first_scalar);
  }
}

LaunchArgs HeldRegion::fused_args(const std::vector<bool>& stored, compiled::LaunchShape& shape) const {
  LaunchArgs args{};
  int operand = 0;
  const int64_t positions = ops_.front().shape.positions;
  shape = compiled::LaunchShape{};
  shape.positions = positions;
  auto add = [&](const Buffer& buffer) {
    args.data[operand] = buffer.data;
    std::copy(buffer.strides, buffer.strides + rank_, args.strides[operand]);
    shape.bytes += static_cast<size_t>(positions) * ir::dtype_size(buffer.dtype);
    ++operand;
  };
  for (const Buffer& buffer : buffers_) {
    if (buffer.external) add(buffer);
  }
  for (size_t index = 0; index < buffers_.size(); ++index) {
    if (stored[index]) add(buffers_[index]);
  }
  std::copy(sizes_, sizes_ + rank_, args.sizes);
  copy_scalars(args);
  // Each position does every op's work: split over threads sooner.
  shape.cost_per_position = std::max<int64_t>(operand, static_cast<int64_t>(ops_.size()));
  return args;
}

size_t HeldRegion::bytes_not_stored(const std::vector<bool>& stored) const {
  size_t bytes = 0;
  const int64_t positions = ops_.empty() ? 0 : ops_.front().shape.positions;
  for (size_t index = 0; index < buffers_.size(); ++index) {
    if (buffers_[index].written && !stored[index]) bytes += static_cast<size_t>(positions) * ir::dtype_size(buffers_[index].dtype);
  }
  return bytes;
}

std::vector<c10::Storage> HeldRegion::release() {
  ops_.clear();
  buffers_.clear();
  reduction_.reset();
  scalars_ = 0;
  rank_ = 0;
  return std::move(storages_);
}

}  // namespace kiln::torch_integration::adaptive
