#include "kiln/distributed/shared_memory_all_reduce.h"

#include <ATen/ops/add.h>
#include <ATen/ops/bitwise_and.h>
#include <ATen/ops/bitwise_or.h>
#include <ATen/ops/bitwise_xor.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/mul.h>
#include <c10/util/Exception.h>

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
    default: TORCH_CHECK(false, "kiln: the shared-memory all_reduce has no ", op_name(op));
  }
}

// out = slots[0] (op) slots[1] (op) ..., in rank order.
void combine_all(const at::Tensor& out, const std::vector<at::Tensor>& slots, RedOp op) {
  combine(out, slots[0], slots[1], op);
  for (size_t rank = 2; rank < slots.size(); ++rank) combine(out, out, slots[rank], op);
}

void check_ok(const Status& status) {
  if (!status.ok()) TORCH_CHECK(false, status.message());
}

}  // namespace

SharedMemoryAllReduce::SharedMemoryAllReduce(std::shared_ptr<SharedMemoryGroup> group)
    : group_(std::move(group)) {
  TORCH_CHECK(group_ != nullptr && group_->size() >= 2, "kiln: a shared-memory all_reduce needs two ranks or more");
}

bool SharedMemoryAllReduce::supports(at::ScalarType dtype, RedOp op) {
  switch (dtype) {
    case at::kFloat: case at::kDouble: case at::kHalf: case at::kBFloat16:
      return op == RedOp::SUM || op == RedOp::PRODUCT || op == RedOp::MIN || op == RedOp::MAX;
    case at::kByte: case at::kChar: case at::kShort: case at::kInt: case at::kLong: case at::kBool:
      return op == RedOp::SUM || op == RedOp::PRODUCT || op == RedOp::MIN || op == RedOp::MAX ||
             is_bitwise(op);
    default:
      return false;
  }
}

void SharedMemoryAllReduce::check_descriptors(int buffer) const {
  const SharedMemoryGroup::Descriptor& own = group_->descriptor(buffer, group_->rank());
  bool same = true;
  for (int rank = 0; rank < group_->size(); ++rank) same = same && group_->descriptor(buffer, rank) == own;
  if (same) return;
  std::string ranks;
  for (int rank = 0; rank < group_->size(); ++rank) {
    const auto& words = group_->descriptor(buffer, rank).words;
    ranks += (rank == 0 ? "rank " : ", rank ") + std::to_string(rank) + " has " + std::to_string(words[2]) +
             " elements of " + c10::toString(static_cast<at::ScalarType>(words[0])) + " (" + op_name(words[1]) + ")";
  }
  TORCH_CHECK(false, "the ranks' all_reduce calls differ (every rank must pass the same dtype, element count "
              "and op): ", ranks);
}

void SharedMemoryAllReduce::run(const at::Tensor& host, RedOp op, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  SharedMemoryGroup& group = *group_;
  const auto deadline = SharedMemoryGroup::Clock::now() + timeout;
  // Reductions on this thread alone: the other ranks have the other cores.
  library::LibraryThreadScope threads(/*small=*/true);
  const bool contiguous = host.is_contiguous();
  const at::Tensor flat = contiguous ? host.view({-1}) : host.contiguous().view({-1});
  const int64_t numel = flat.numel();
  const int64_t element_bytes = static_cast<int64_t>(flat.element_size());
  const int64_t per_piece = static_cast<int64_t>(group.slot_bytes()) / element_bytes;
  const auto options = flat.options();
  auto alias = [&](char* data, int64_t count) { return at::from_blob(data, {count}, options); };
  const int rank = group.rank();
  const int size = group.size();
  int64_t offset = 0;
  bool first = true;
  do {  // at least once: ranks with empty tensors still compare descriptors
    const int64_t count = std::min(per_piece, numel - offset);
    const int buffer = group.begin_round();
    const at::Tensor mine = flat.narrow(0, offset, count);
    if (count > 0) alias(group.slot(buffer, rank), count).copy_(mine);
    if (first) {
      SharedMemoryGroup::Descriptor descriptor;
      descriptor.words[0] = static_cast<int64_t>(flat.scalar_type());
      descriptor.words[1] = static_cast<int64_t>(op);
      descriptor.words[2] = numel;
      group.publish(buffer, descriptor);
    }
    check_ok(group.barrier(deadline));
    if (first) check_descriptors(buffer);
    first = false;
    std::vector<at::Tensor> slots;
    for (int peer = 0; peer < size; ++peer) slots.push_back(alias(group.slot(buffer, peer), count));
    if (count * element_bytes <= static_cast<int64_t>(kSharedPieceBytes)) {
      if (count > 0) combine_all(mine, slots, op);
    } else {
      const int64_t begin = count * rank / size;
      const int64_t end = count * (rank + 1) / size;
      const at::Tensor result = alias(group.result(buffer), count);
      std::vector<at::Tensor> shares;
      for (const at::Tensor& slot : slots) shares.push_back(slot.narrow(0, begin, end - begin));
      combine_all(result.narrow(0, begin, end - begin), shares, op);
      check_ok(group.barrier(deadline));
      mine.copy_(result);
    }
    offset += count;
  } while (offset < numel);
  if (!contiguous) host.copy_(flat.view(host.sizes()));
}

}  // namespace kiln::torch_integration::distributed
