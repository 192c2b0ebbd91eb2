// Collectives among ranks on one host, through a SharedMemoryGroup
// (runtime/shared_memory_group.h) instead of Gloo's TCP: all_reduce,
// all_gather_into_tensor, reduce_scatter_tensor, broadcast, barrier and
// all_to_all_single.
//
// A tensor goes through in pieces that fit the group's slots. For each piece
// every rank copies what it contributes into its slot and meets the others
// (one barrier); then each rank reads what it needs from the slots:
//   - all_reduce: a piece of up to kSharedPieceBytes is reduced whole by every
//     rank, reading the slots straight into its own tensor (a second barrier
//     would cost more than the reading). A larger piece is split among the
//     ranks: each reduces its share into the result area, meets the others
//     again, and copies the whole result out, so the ranks divide the
//     arithmetic as a ring all-reduce does;
//   - all_gather_into_tensor: each rank copies every slot to its place in the
//     output;
//   - reduce_scatter_tensor: each rank's slot holds its inputs for every
//     destination, side by side; each rank reduces its own column;
//   - broadcast: the root's slot is copied by the others;
//   - barrier: one meeting, with nothing in the slots;
//   - all_to_all_single: each rank's slot holds how many elements it sends to
//     each rank, then its whole input; each rank copies its block from every
//     slot. One piece only: when some rank's input does not fit its slot, all
//     ranks learn it at the meeting and the caller uses Gloo instead.
// Reductions combine the slots in rank order, so all ranks get the same bits.
//
// With its first piece each rank publishes what it called (the collective,
// dtype, element count, op or root); they are compared at the first barrier,
// so ranks that call different collectives, or pass different sizes or
// dtypes, fail on every rank with each rank's description (over Gloo a size
// mismatch ends a process).
//
// Copies and reductions are ATen's CPU ops on aliases of the shared memory,
// on the calling thread alone: each rank is a process with its own core.
// Every method throws c10::Error naming what failed: a rank that timed out
// or exited, or ranks whose calls differ.
//
// Part of the distributed layer: KilnBackend (backend.h) owns one, over the
// group runtime/shared_memory_group.h sets up.
//
// Sync: every method blocks the calling thread until this rank's part of the
// collective is done, or until `timeout` (one deadline for all its pieces)
// passes. Tensors are borrowed for the call only; a non-contiguous one goes
// through a contiguous copy that is written back at the end.
//
// Ownership and threads: the group is shared (Python holds it too) but must
// be used by this object alone. Methods may be called from any thread; a
// mutex lets one collective at a time run. After a barrier failed, the
// ranks are out of step and every later collective on the group fails at
// once (the group cannot recover).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>

#include "kiln/runtime/shared_memory_group.h"

namespace kiln::torch_integration::distributed {

class SharedMemoryCollectives {
 public:
  static constexpr size_t kSharedPieceBytes = size_t{128} << 10;
  using Timeout = std::chrono::milliseconds;
  using RedOp = c10d::ReduceOp::RedOpType;

  // Throws c10::Error unless `group` has two ranks or more.
  explicit SharedMemoryCollectives(std::shared_ptr<SharedMemoryGroup> group);

  // Whether tensors of `dtype` go through shared memory (the others keep
  // Gloo); with `op`, also reduced with it.
  static bool supports(at::ScalarType dtype);
  static bool supports(at::ScalarType dtype, RedOp op);

  // Each takes CPU aliases of device memory (host_alias), which the caller
  // has ordered after the device's queued work. Ranks whose sizes, dtypes,
  // op or root differ all fail alike, at the first meeting. (all_to_all
  // compares only the collective and the dtype there; a count one rank
  // sends that another does not expect fails the receiving rank alone.)
  void all_reduce(const at::Tensor& tensor, RedOp op, Timeout timeout);
  void all_gather(const at::Tensor& output, const at::Tensor& input, Timeout timeout);
  void reduce_scatter(const at::Tensor& output, const at::Tensor& input, RedOp op, Timeout timeout);
  void broadcast(const at::Tensor& tensor, int root, Timeout timeout);
  void barrier(Timeout timeout);
  // Splits in rows of dim 0 (empty: equal). Returns false, having moved
  // nothing, when some rank's input does not fit its slot.
  bool all_to_all(const at::Tensor& output, const at::Tensor& input, c10::IntArrayRef output_splits,
                  c10::IntArrayRef input_splits, Timeout timeout);

 private:
  // What a rank called, compared across ranks at the first barrier.
  enum class Kind : int64_t { kAllReduce = 1, kAllGather, kReduceScatter, kBroadcast, kBarrier, kAllToAll };
  // What a rank publishes: the collective, its input's dtype and element
  // count, `argument` (the op, the root) and `output` (the output's element
  // count where it has its own).
  struct Call {
    Kind kind;
    const at::Tensor& input;
    int64_t argument;
    int64_t output;
  };
  // Runs the pieces of one collective: for each, `fill(buffer, offset,
  // count)` writes this rank's slot, a barrier, then `finish(buffer, offset,
  // count)`; `total` elements in pieces of at most `per_piece`, at least one
  // piece (ranks with nothing to send still compare their calls).
  using PieceStep = std::function<void(int buffer, int64_t offset, int64_t count)>;
  void in_pieces(const Call& call, int64_t total, int64_t per_piece,
                 std::chrono::steady_clock::time_point deadline, const PieceStep& fill,
                 const PieceStep& finish);
  // Held while a collective runs: the group (one collective at a time), the
  // collective's deadline, and the calling thread alone for ATen's copies and
  // reductions (the other ranks have the other cores).
  struct Running;
  // Fails unless every rank's descriptor for `buffer` matches this rank's
  // in its first `compared` words.
  void check_calls(int buffer, int compared = 6) const;
  at::Tensor slot(int buffer, int rank, const at::Tensor& like, int64_t count) const;
  int64_t slot_elements(const at::Tensor& like) const;

  std::shared_ptr<SharedMemoryGroup> group_;
  std::mutex mutex_;  // one collective at a time on the group
};

}  // namespace kiln::torch_integration::distributed
