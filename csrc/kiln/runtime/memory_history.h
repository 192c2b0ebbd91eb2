// MemoryHistory: what a CachingAllocator did, for memory snapshots
// (torch.kiln.memory._record_memory_history() and _snapshot(), which follow
// torch.cuda.memory's).
//
// While enabled, the allocator records each action (an allocation, a free
// requested and completed, a segment taken from or returned to the driver,
// an out-of-memory failure) in a ring of at most `max_entries` entries, and
// keeps with each block the context of the call that allocated it. A context
// is opaque here: the torch layer's gatherer returns one (a captured Python
// and C++ stack) and symbolizes it when a snapshot is taken. Contexts are
// gathered only on threads that do not run queued work (a stream's worker
// may not wait for the interpreter), and before the allocator takes its lock.
//
// Cost: while disabled, one relaxed atomic load per allocation and free.
//
// Thread-safety: the owning allocator calls everything but gather_for_*()
// under its lock; gather_for_*() read atomics only.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace kiln {

using MemoryContext = std::shared_ptr<void>;
// Captures the calling thread's stack; may return null.
using MemoryContextGatherer = MemoryContext (*)();

struct MemoryHistoryOptions {
  bool record_actions = true;      // keep the ring of actions ("all"), not only block contexts ("state")
  bool context_for_blocks = true;  // context of each live allocation
  bool context_for_allocs = true;  // ... of each alloc action
  bool context_for_frees = true;   // ... of each free action
  size_t max_entries = SIZE_MAX;
  MemoryContextGatherer gatherer = nullptr;
};

struct MemoryAction {
  enum Kind { kAlloc, kFreeRequested, kFreeCompleted, kSegmentAlloc, kSegmentFree, kOutOfMemory };
  Kind kind;
  uint64_t address = 0;
  uint64_t size = 0;
  int64_t stream = 0;
  int64_t time_us = 0;       // system clock, since the Unix epoch
  uint64_t device_free = 0;  // out of memory: what the device still had
  MemoryContext context = nullptr;
};

class MemoryHistory {
 public:
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // Whether live blocks keep the context of their allocation.
  bool keeps_block_context() const { return enabled() && options_.context_for_blocks; }
  bool keeps_alloc_context() const { return enabled() && options_.context_for_allocs; }

  // Needs the allocator's lock. Enabling again keeps the recorded actions.
  void enable(const MemoryHistoryOptions& options);
  void disable();
  void clear();

  // Appends an action (needs the allocator's lock); no-op unless recording actions.
  void record(MemoryAction action);
  // The actions in the order they happened (needs the allocator's lock).
  std::vector<MemoryAction> actions() const;

  // The context to keep for an allocation or a free, gathered in the calling
  // thread (call before taking the allocator's lock); null when not wanted.
  MemoryContext gather_for_alloc() const;
  MemoryContext gather_for_free() const;

  static int64_t now_us();

 private:
  std::atomic<bool> enabled_{false};
  MemoryHistoryOptions options_;
  // Read without the lock by gather_for_*(): null when that context is not wanted.
  std::atomic<MemoryContextGatherer> alloc_gatherer_{nullptr};
  std::atomic<MemoryContextGatherer> free_gatherer_{nullptr};
  std::vector<MemoryAction> ring_;
  size_t next_ = 0;  // where the next action goes once the ring is full
};

}  // namespace kiln
