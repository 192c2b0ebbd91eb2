#include "kiln/distributed/shared_memory_collectives.h"

#include <ATen/ops/add.h>
#include <ATen/ops/bitwise_and.h>
#include <ATen/ops/bitwise_or.h>
#include <ATen/ops/bitwise_xor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/mul.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/aten/library/library_threads.h"

namespace kiln::torch_integration::distributed {
namespace {

using RedOp = c10d::ReduceOp::RedOpType;

const char* op_name(int64_t op) {
  switch (static_cast<RedOp>(op)) {
    case RedOp::SUM: return "SUM";
    case RedOp::PRODUCT: return "PRODUCT";
    case RedOp::MIN: return "MIN";
    case RedOp::MAX: return "MAX";
    case RedOp::BAND: return "BAND";
    case RedOp::BOR: return "BOR";
    case RedOp::BXOR: return "BXOR";
    default: return "another op";
  }
}

bool is_bitwise(RedOp op) { return op == RedOp::BAND || op == RedOp::BOR || op == RedOp::BXOR; }

// out = a (op) b, elementwise. `out` may be `a`.
void combine(at::Tensor out, const at::Tensor& a, const at::Tensor& b, RedOp op) {
  switch (op) {
    case RedOp::SUM: at::add_out(out, a, b); return;
    case RedOp::PRODUCT: at::mul_out(out, a, b); return;
    case RedOp::MIN: at::minimum_out(out, a, b); return;
    case RedOp::MAX: at::maximum_out(out, a, b); return;
    case RedOp::BAND: at::bitwise_and_out(out, a, b); return;
    case RedOp::BOR: at::bitwise_or_out(out, a, b); return;
    case RedOp::BXOR: at::bitwise_xor_out(out, a, b); return;
    default: TORCH_CHECK(false, "kiln: the shared-memory transport cannot reduce with ", op_name(op));
  }
}

// out = parts[0] (op) parts[1] (op) ..., in rank order.
void combine_all(const at::Tensor& out, const std::vector<at::Tensor>& parts, RedOp op) {
  combine(out, parts[0], parts[1], op);
  for (size_t rank = 2; rank < parts.size(); ++rank) combine(out, out, parts[rank], op);
}

void check_ok(const Status& status) {
  if (!status.ok()) TORCH_CHECK(false, status.message());
}

// A contiguous 1-D view of `tensor`, or of a contiguous copy of it (made
// from its values when `read`), which write_back() copies into it.
struct Flat {
  Flat(const at::Tensor& tensor, bool read) : original(tensor), copied(!tensor.is_contiguous()) {
    at::Tensor contiguous = !copied ? tensor
                            : read  ? tensor.contiguous()
                                    : at::empty(tensor.sizes(), tensor.options());
    flat = contiguous.view({-1});
  }
  void write_back() const {
    if (copied) original.copy_(flat.view(original.sizes()));
  }
  at::Tensor original;
  bool copied;
  at::Tensor flat;
};

const char* kind_name(int64_t kind) {
  switch (kind) {
    case 1: return "all_reduce";
    case 2: return "all_gather_into_tensor";
    case 3: return "reduce_scatter_tensor";
    case 4: return "broadcast";
    case 5: return "barrier";
    case 6: return "all_to_all_single";
    default: return "another collective";
  }
}

// "all_reduce (SUM) of 4 elements of Float", from a rank's descriptor.
std::string describe(const SharedMemoryGroup::Descriptor& descriptor) {
  const auto& words = descriptor.words;  // kind, dtype, input elements, argument, output elements
  std::string text = kind_name(words[0]);
  if (words[0] == 5) return text;
  if (words[0] == 6) return text + " of " + c10::toString(static_cast<at::ScalarType>(words[1]));
  if (words[0] == 1 || words[0] == 3) text += std::string(" (") + op_name(words[3]) + ")";
  if (words[0] == 4) text += " from rank " + std::to_string(words[3]);
  text += " of " + std::to_string(words[2]) + " elements of " +
          c10::toString(static_cast<at::ScalarType>(words[1]));
  if (words[0] == 2 || words[0] == 3) text += " into " + std::to_string(words[4]);
  return text;
}

}  // namespace

struct SharedMemoryCollectives::Running {
  Running(std::mutex& mutex, Timeout timeout)
      : lock(mutex), deadline(std::chrono::steady_clock::now() + timeout), threads(/*small=*/true) {}
  std::lock_guard<std::mutex> lock;
  const std::chrono::steady_clock::time_point deadline;
  library::LibraryThreadScope threads;
};

SharedMemoryCollectives::SharedMemoryCollectives(std::shared_ptr<SharedMemoryGroup> group)
    : group_(std::move(group)) {
  TORCH_CHECK(group_ != nullptr && group_->size() >= 2,
              "kiln: the shared-memory transport needs a group of two ranks or more");
}

bool SharedMemoryCollectives::supports(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: case at::kDouble: case at::kHalf: case at::kBFloat16:
    case at::kByte: case at::kChar: case at::kShort: case at::kInt: case at::kLong: case at::kBool:
      return true;
    default:
      return false;
  }
}

bool SharedMemoryCollectives::supports(at::ScalarType dtype, RedOp op) {
  if (!supports(dtype)) return false;
  if (is_bitwise(op)) return !at::isFloatingType(dtype);
  return op == RedOp::SUM || op == RedOp::PRODUCT || op == RedOp::MIN || op == RedOp::MAX;
}

at::Tensor SharedMemoryCollectives::slot(int buffer, int rank, const at::Tensor& like, int64_t count) const {
  return at::from_blob(group_->slot(buffer, rank), {count}, like.options());
}

int64_t SharedMemoryCollectives::slot_elements(const at::Tensor& like) const {
  return static_cast<int64_t>(group_->slot_bytes()) / static_cast<int64_t>(like.element_size());
}

void SharedMemoryCollectives::check_calls(int buffer, int compared) const {
  const SharedMemoryGroup::Descriptor& own = group_->descriptor(buffer, group_->rank());
  bool same = true;
  for (int rank = 0; rank < group_->size(); ++rank) {
    const auto& words = group_->descriptor(buffer, rank).words;
    same = same && std::equal(words, words + compared, own.words);
  }
  if (same) return;
  std::string ranks;
  for (int rank = 0; rank < group_->size(); ++rank) {
    ranks += (rank == 0 ? "rank " : ", rank ") + std::to_string(rank) + " called " +
             describe(group_->descriptor(buffer, rank));
  }
  TORCH_CHECK(false, "the ranks' calls differ (every rank must call the same collective with the same "
              "dtype, sizes and op): ", ranks);
}

void SharedMemoryCollectives::in_pieces(const Call& call, int64_t total, int64_t per_piece,
                                        std::chrono::steady_clock::time_point deadline, const PieceStep& fill,
                                        const PieceStep& finish) {
  SharedMemoryGroup::Descriptor descriptor;
  descriptor.words[0] = static_cast<int64_t>(call.kind);
  descriptor.words[1] = static_cast<int64_t>(call.input.scalar_type());
  descriptor.words[2] = call.input.numel();
  descriptor.words[3] = call.argument;
  descriptor.words[4] = call.output;
  int64_t offset = 0;
  bool first = true;
  do {
    const int64_t count = std::min(per_piece, total - offset);
    const int buffer = group_->begin_round();
    fill(buffer, offset, count);
    if (first) group_->publish(buffer, descriptor);
    check_ok(group_->barrier(deadline));
    if (first) check_calls(buffer);
    first = false;
    finish(buffer, offset, count);
    offset += count;
  } while (offset < total);
}

void SharedMemoryCollectives::all_reduce(const at::Tensor& tensor, RedOp op, Timeout timeout) {
  const Running running(mutex_, timeout);
  const Flat data(tensor, /*read=*/true);
  const at::Tensor& flat = data.flat;
  const int rank = group_->rank();
  const int size = group_->size();
  auto fill = [&](int buffer, int64_t offset, int64_t count) {
    slot(buffer, rank, flat, count).copy_(flat.narrow(0, offset, count));
  };
  auto finish = [&](int buffer, int64_t offset, int64_t count) {
    const at::Tensor mine = flat.narrow(0, offset, count);
    std::vector<at::Tensor> slots;
    for (int peer = 0; peer < size; ++peer) slots.push_back(slot(buffer, peer, flat, count));
    if (count * flat.element_size() <= static_cast<int64_t>(kSharedPieceBytes)) {
      if (count > 0) combine_all(mine, slots, op);
      return;
    }
    const int64_t begin = count * rank / size;
    const int64_t end = count * (rank + 1) / size;
    const at::Tensor result = at::from_blob(group_->result(buffer), {count}, flat.options());
    std::vector<at::Tensor> shares;
    for (const at::Tensor& part : slots) shares.push_back(part.narrow(0, begin, end - begin));
    combine_all(result.narrow(0, begin, end - begin), shares, op);
    check_ok(group_->barrier(running.deadline));
    mine.copy_(result);
  };
  in_pieces({Kind::kAllReduce, flat, static_cast<int64_t>(op), 0}, flat.numel(), slot_elements(flat),
            running.deadline, fill, finish);
  data.write_back();
}

void SharedMemoryCollectives::all_gather(const at::Tensor& output, const at::Tensor& input, Timeout timeout) {
  const Running running(mutex_, timeout);
  const Flat source(input, /*read=*/true);
  const Flat target(output, /*read=*/false);
  const at::Tensor& in = source.flat;
  const at::Tensor& out = target.flat;
  const int rank = group_->rank();
  const int size = group_->size();
  const int64_t n = in.numel();
  auto fill = [&](int buffer, int64_t offset, int64_t count) {
    slot(buffer, rank, in, count).copy_(in.narrow(0, offset, count));
  };
  auto finish = [&](int buffer, int64_t offset, int64_t count) {
    if (offset == 0) {  // the first piece, after the ranks compared their calls: all fail alike
      TORCH_CHECK(out.numel() == n * size && out.scalar_type() == in.scalar_type(),
                  "all_gather_into_tensor needs an output of ", size, " x ", n, " elements of ",
                  in.scalar_type(), ", got ", out.numel(), " elements of ", out.scalar_type());
    }
    for (int peer = 0; peer < size; ++peer) {
      out.narrow(0, peer * n + offset, count).copy_(slot(buffer, peer, in, count));
    }
  };
  in_pieces({Kind::kAllGather, in, 0, out.numel()}, n, slot_elements(in), running.deadline, fill, finish);
  target.write_back();
}

void SharedMemoryCollectives::reduce_scatter(const at::Tensor& output, const at::Tensor& input, RedOp op,
                                             Timeout timeout) {
  const Running running(mutex_, timeout);
  const Flat source(input, /*read=*/true);
  const Flat target(output, /*read=*/false);
  const at::Tensor& in = source.flat;
  const at::Tensor& out = target.flat;
  const int rank = group_->rank();
  const int size = group_->size();
  const int64_t n = out.numel();
  const bool fits = in.numel() == n * size && in.scalar_type() == out.scalar_type();
  // A rank's slot holds its piece for every destination, side by side.
  auto fill = [&](int buffer, int64_t offset, int64_t count) {
    if (!fits) return;  // reported after the ranks compared their calls
    const at::Tensor own = slot(buffer, rank, in, count * size);
    for (int destination = 0; destination < size; ++destination) {
      own.narrow(0, destination * count, count).copy_(in.narrow(0, destination * n + offset, count));
    }
  };
  auto finish = [&](int buffer, int64_t offset, int64_t count) {
    if (offset == 0) {  // the first piece, after the ranks compared their calls
      TORCH_CHECK(fits, "reduce_scatter_tensor needs an input of ", size, " x ", n, " elements of ",
                  out.scalar_type(), ", got ", in.numel(), " elements of ", in.scalar_type());
    }
    if (count == 0) return;
    std::vector<at::Tensor> columns;
    for (int peer = 0; peer < size; ++peer) {
      columns.push_back(slot(buffer, peer, in, count * size).narrow(0, rank * count, count));
    }
    combine_all(out.narrow(0, offset, count), columns, op);
  };
  in_pieces({Kind::kReduceScatter, in, static_cast<int64_t>(op), n}, n, slot_elements(in) / size,
            running.deadline, fill, finish);
  target.write_back();
}

void SharedMemoryCollectives::broadcast(const at::Tensor& tensor, int root, Timeout timeout) {
  const Running running(mutex_, timeout);
  const int rank = group_->rank();
  const Flat data(tensor, /*read=*/rank == root);
  const at::Tensor& flat = data.flat;
  TORCH_CHECK(root >= 0 && root < group_->size(), "broadcast from rank ", root, " in a group of ",
              group_->size());
  auto fill = [&](int buffer, int64_t offset, int64_t count) {
    if (rank == root) slot(buffer, rank, flat, count).copy_(flat.narrow(0, offset, count));
  };
  auto finish = [&](int buffer, int64_t offset, int64_t count) {
    if (rank != root) flat.narrow(0, offset, count).copy_(slot(buffer, root, flat, count));
  };
  in_pieces({Kind::kBroadcast, flat, root, 0}, flat.numel(), slot_elements(flat), running.deadline, fill, finish);
  if (rank != root) data.write_back();
}

void SharedMemoryCollectives::barrier(Timeout timeout) {
  const Running running(mutex_, timeout);
  const at::Tensor nothing = at::empty({0}, at::TensorOptions().dtype(at::kByte));
  auto no_data = [](int, int64_t, int64_t) {};
  in_pieces({Kind::kBarrier, nothing, 0, 0}, 0, 1, running.deadline, no_data, no_data);
}

namespace {

// Elements sent to (or received from) each rank: `splits` rows of dim 0 each,
// or equal parts when empty. Empty when they do not fit the tensor.
std::vector<int64_t> element_counts(const at::Tensor& tensor, c10::IntArrayRef splits, int size) {
  if (tensor.dim() == 0) return {};
  const int64_t rows = tensor.size(0);
  const int64_t row = rows == 0 ? 0 : tensor.numel() / rows;
  if (splits.empty()) {
    if (rows % size != 0) return {};
    return std::vector<int64_t>(size, rows / size * row);
  }
  if (static_cast<int64_t>(splits.size()) != size) return {};
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (int64_t split : splits) {
    if (split < 0) return {};
    counts.push_back(split * row);
    total += split;
  }
  if (total != rows) return {};
  return counts;
}

}  // namespace

bool SharedMemoryCollectives::all_to_all(const at::Tensor& output, const at::Tensor& input,
                                         c10::IntArrayRef output_splits, c10::IntArrayRef input_splits,
                                         Timeout timeout) {
  const Running running(mutex_, timeout);
  const int rank = group_->rank();
  const int size = group_->size();
  const Flat source(input, /*read=*/true);
  const Flat target(output, /*read=*/false);
  const std::vector<int64_t> sending = element_counts(input, input_splits, size);
  const std::vector<int64_t> receiving = element_counts(output, output_splits, size);
  const bool valid = !sending.empty() && !receiving.empty() && input.scalar_type() == output.scalar_type();
  const size_t header = static_cast<size_t>(size) * sizeof(int64_t);
  const bool fits = valid && header + source.flat.nbytes() <= group_->slot_bytes();
  const int buffer = group_->begin_round();
  char* own = group_->slot(buffer, rank);
  if (fits) {
    std::memcpy(own, sending.data(), header);
    at::from_blob(own + header, {source.flat.numel()}, source.flat.options()).copy_(source.flat);
  }
  // Compared: the collective and the dtype. Word 5 says whether this rank's
  // input fits (1), does not (0), or its splits do not match its tensors (2).
  SharedMemoryGroup::Descriptor descriptor;
  descriptor.words[0] = static_cast<int64_t>(Kind::kAllToAll);
  descriptor.words[1] = static_cast<int64_t>(input.scalar_type());
  descriptor.words[5] = !valid ? 2 : fits ? 1 : 0;
  group_->publish(buffer, descriptor);
  check_ok(group_->barrier(running.deadline));
  check_calls(buffer, /*compared=*/2);
  bool all_fit = true;
  for (int peer = 0; peer < size; ++peer) {
    const int64_t state = group_->descriptor(buffer, peer).words[5];
    TORCH_CHECK(state != 2, "all_to_all_single: rank ", peer, "'s split sizes do not divide its tensors' first "
                "dimension, or its input and output dtypes differ");
    all_fit = all_fit && state == 1;
  }
  if (!all_fit) return false;
  int64_t placed = 0;
  for (int peer = 0; peer < size; ++peer) {
    const char* slot = group_->slot(buffer, peer);
    std::vector<int64_t> counts(size);
    std::memcpy(counts.data(), slot, header);
    int64_t offset = 0;
    for (int before = 0; before < rank; ++before) offset += counts[before];
    TORCH_CHECK(counts[rank] == receiving[peer], "all_to_all_single: rank ", peer, " sends ", counts[rank],
                " elements to rank ", rank, ", which expects ", receiving[peer]);
    const at::Tensor block = at::from_blob(const_cast<char*>(slot) + header + offset * source.flat.element_size(),
                                           {counts[rank]}, source.flat.options());
    target.flat.narrow(0, placed, counts[rank]).copy_(block);
    placed += counts[rank];
  }
  target.write_back();
  return true;
}

}  // namespace kiln::torch_integration::distributed
