// The `kiln` backend of torch.distributed: a c10d::Backend for kiln tensors.
//
// On the host target the transport is Gloo (TCP; multi-node through
// torchrun's rendezvous), given zero-copy CPU aliases of device memory. Each
// collective first waits for the work already queued on the current stream,
// so it reads what that work wrote, then starts on the transport and returns
// a KilnWork (work.h). AVG and PREMUL_SUM are built here from SUM, the same
// way for every collective, since Gloo's own AVG is not uniform across them.
// When the group's ranks share a host, all_reduce, all_gather_into_tensor,
// reduce_scatter_tensor and broadcast go through shared memory instead
// (shared_memory_collectives.h); the group's shared-memory segment is set up
// by torch_kiln.distributed and handed to the constructor.
// Coalescing is not offered (supportsCoalescing() is false), so
// batch_isend_irecv issues each send and receive on its own; Gloo's sends do
// not wait for the matching receive.
//
// Part of the distributed layer, the top of the C++ stack: it uses the c10
// layer (current streams, check_status) and host_alias() from aten/; Python
// (torch_kiln.distributed) constructs it and registers it with c10d.
//
// Sync or async: every collective blocks the caller until the current
// stream of the tensors' device has run its queue. Over Gloo it then starts
// the transport and returns at once; Gloo's threads move the data, and the
// finishing step runs on the completer thread or in wait(). Through shared
// memory the whole collective runs in the calling thread and the returned
// work is already complete (async_op overlaps nothing there). Either way the
// data moves outside stream order: work enqueued before wait() must not
// touch the tensors.
//
// Ownership: the returned work keeps the output tensors alive (for in-place
// collectives, the tensors themselves). Inputs that are only read, those of
// the all_gather, gather, scatter and all_to_all families, reach Gloo as
// non-owning host aliases: the caller keeps them alive until the work
// completes. (reduce and reduce_scatter hand Gloo owned copies.)
//
// Threads: collectives are called without the GIL (c10d's bindings release
// it) and, as for any process group, in the same order on every rank. The
// shared-memory path runs one collective at a time (SharedMemoryCollectives'
// lock); setTimeout() is not synchronized with collectives in flight.
//
// Errors: a bad call (a tensor not on one kiln device, AVG of bool,
// PREMUL_SUM without a factor or of integers, mismatched list lengths)
// throws c10::Error at once, as does a failure pending on the current stream;
// the other ranks then wait for this one until their timeout. A failure of
// the transport or of shared memory is the work's DistBackendError, thrown
// by wait().
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <chrono>
#include <functional>
#include <memory>

#include "kiln/distributed/shared_memory_collectives.h"
#include "kiln/distributed/work.h"

namespace kiln::torch_integration::distributed {

class KilnBackend : public c10d::Backend {
 public:
  // `transport`: a Gloo backend of the same group (same rank, size and
  // store, under its own prefix), made in Python by torch_kiln.distributed;
  // shared with Python, held until destruction; must not be null (throws).
  // `shared_memory`: the group's segment when all its ranks are on this
  // host, else null; shared with Python, used only by this backend. Starts
  // the completer thread and installs the abort report (abort_report.h).
  //
  // Destruction first destroys the completer, which completes every work
  // still in flight (waiting for its transport) while the transport is
  // alive. Works returned earlier may outlive the backend.
  KilnBackend(int rank, int size, std::chrono::milliseconds timeout,
              c10::intrusive_ptr<c10d::Backend> transport,
              std::shared_ptr<SharedMemoryGroup> shared_memory = nullptr);
  // Whether collectives go through shared memory.
  bool uses_shared_memory() const { return shared_memory_ != nullptr; }

  const std::string getBackendName() const override { return "kiln"; }
  bool supportsCoalescing() const override { return false; }
  bool supportsSplitting() const override { return false; }
  // The group's timeout for later collectives, here and in the transport.
  void setTimeout(std::chrono::milliseconds timeout) override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int destination,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int source,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                               int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  void setSequenceNumberForGroup() override { transport_->setSequenceNumberForGroup(); }
  uint64_t getSequenceNumberForGroup() override {
    return transport_->getSequenceNumberForGroup();
  }

 private:
  struct Launch;  // backend.cc
  // The work of a collective that ended in this thread, with `failure` (or
  // none) as its error; `after` runs if it succeeded. Completed before it is
  // returned.
  c10::intrusive_ptr<c10d::Work> finished_here(const char* name, c10d::OpType type,
                                               std::vector<at::Tensor> outputs, std::exception_ptr failure,
                                               KilnWork::Finish after);
  // Runs `run` (a collective through shared memory) in this thread now; what
  // it throws becomes the work's error, raised by wait() as a transport's
  // would be. `after` (AVG's division) runs once it succeeded.
  c10::intrusive_ptr<c10d::Work> ran_in_shared_memory(const char* name, c10d::OpType type,
                                                      std::vector<at::Tensor> outputs,
                                                      const std::function<void()>& run,
                                                      KilnWork::Finish after);
  // Whether `tensors` go through shared memory (reduced with `op`).
  bool through_shared_memory(const std::vector<at::Tensor>& tensors) const;
  bool through_shared_memory(const std::vector<at::Tensor>& tensors, c10d::ReduceOp::RedOpType op) const;
  // A collective's own timeout, else the group's.
  std::chrono::milliseconds timeout_for(std::chrono::milliseconds requested) const;
  c10::intrusive_ptr<c10d::Backend> transport_;
  std::unique_ptr<SharedMemoryCollectives> shared_memory_;
  std::chrono::milliseconds timeout_;
  // Last member: destroyed first, completing what is in flight while the
  // transport is still alive.
  std::unique_ptr<Completer> completer_;
};

}  // namespace kiln::torch_integration::distributed
