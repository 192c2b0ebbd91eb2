// all_reduce among ranks on one host, through a SharedMemoryGroup
// (runtime/shared_memory_group.h) instead of Gloo's TCP.
//
// A tensor goes through in pieces of at most the group's slot size. For each
// piece every rank copies its elements into its slot and meets the others
// (one barrier). A piece of up to kSharedPieceBytes is then reduced whole by
// every rank, reading the slots straight into its own tensor: a second
// barrier would cost more than the reading. A larger piece is split among the
// ranks: each reduces its share into the result area, meets the others again,
// and copies the whole result out, so the ranks divide the arithmetic as a
// ring all-reduce does. Every rank combines the slots in rank order, so all
// ranks get the same bits.
//
// With its first piece each rank publishes its dtype, op and element count;
// they are compared at the first barrier, so a mismatched all_reduce fails on
// every rank with each rank's description (over Gloo a size mismatch ends a
// process).
//
// The reductions are ATen's CPU ops on aliases of the shared memory, on the
// calling thread alone: each rank is a process with its own core to use.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <chrono>
#include <memory>
#include <mutex>

#include "kiln/runtime/shared_memory_group.h"

namespace kiln::torch_integration::distributed {

class SharedMemoryAllReduce {
 public:
  static constexpr size_t kSharedPieceBytes = size_t{128} << 10;

  explicit SharedMemoryAllReduce(std::shared_ptr<SharedMemoryGroup> group);

  // Whether a tensor of `dtype` reduced with `op` goes through shared memory
  // (the other cases keep Gloo).
  static bool supports(at::ScalarType dtype, c10d::ReduceOp::RedOpType op);

  // Reduces `host` (a CPU alias of device memory) in place across the group;
  // throws c10::Error naming what failed: a rank that timed out or exited, or
  // ranks whose tensors differ.
  void run(const at::Tensor& host, c10d::ReduceOp::RedOpType op, std::chrono::milliseconds timeout);

 private:
  void check_descriptors(int buffer) const;
  std::shared_ptr<SharedMemoryGroup> group_;
  std::mutex mutex_;  // one collective at a time on the group
};

}  // namespace kiln::torch_integration::distributed
