// CachingAllocator: device memory for one device, cached in size-class pools.
//
// Requests are rounded up to 512 bytes. Requests up to 1 MiB come from the
// small pool, carved out of 2 MiB segments; larger ones from the large pool
// (20 MiB segments for requests under 10 MiB, else the request rounded up to
// 2 MiB). A cached block larger than the request is split, and freed
// neighbours in a segment are merged again, so the driver is asked for memory
// only when the pools cannot serve a request.
//
// Stream-aware reuse: a block belongs to the stream it was allocated on and is
// reused only by allocations on that stream, so work still queued there stays
// ordered before the block's next use. If record_stream() marked the block as
// used on other streams, free() records an event on each of them and the block
// returns to its pool only when those events complete.
//
// Freed before its queued work ran: as on CUDA, a block may be freed while
// work queued on its stream still reads or writes it (the torch layer lets
// queued work drop its hold on the tensors it uses, docs/design/memory.md).
// That is safe for the next allocation from the host, whose work is queued
// behind, but not for memory that leaves the stream's order, so free() notes
// the stream's submitted() count as the block's fence, and:
//   - a segment goes back to the driver only once its fences have completed:
//     empty_cache() and the out-of-memory retry first wait for that stream
//     (except on a thread running queued work, which skips such segments);
//   - an allocation made while running queued work (a library call's scratch
//     tensor on the stream's worker, ordered at the item that runs, not at
//     the end of the queue) takes only blocks whose fence has completed.
//
// Out of memory: when the driver refuses a segment, the allocator returns all
// cached, unused segments to the driver and tries once more; if that fails it
// returns kOutOfMemory with a message describing the device's memory.
//
// Memory history: while enabled (enable_history), every action is recorded
// with the caller's context and snapshot() lists each segment and its blocks,
// for torch.kiln.memory._snapshot(); see memory_history.h.
//
// Thread-safety: all methods are thread-safe. Lock order is allocator, then
// stream: the allocator may enqueue event markers while holding its lock.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/allocator_stats.h"
#include "kiln/runtime/driver.h"
#include "kiln/runtime/event.h"
#include "kiln/runtime/memory_history.h"
#include "kiln/runtime/stream.h"

namespace kiln {

class CachingAllocator {
 public:
  static constexpr size_t kMinimumBlockSize = 512;
  static constexpr size_t kSmallRequestLimit = size_t{1} << 20;   // 1 MiB
  static constexpr size_t kSmallSegmentSize = size_t{2} << 20;    // 2 MiB
  static constexpr size_t kLargeSegmentSize = size_t{20} << 20;   // 20 MiB
  static constexpr size_t kMidRequestLimit = size_t{10} << 20;    // 10 MiB
  static constexpr size_t kSegmentRounding = size_t{2} << 20;     // 2 MiB

  CachingAllocator(Driver& driver, int device);
  ~CachingAllocator();  // returns cached segments; live blocks are leaked
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  int device() const { return device_; }

  // Returns memory for `bytes` bytes usable in order on `stream`; nullptr for
  // zero bytes. Fails with kOutOfMemory.
  StatusOr<void*> allocate(size_t bytes, Stream& stream);
  // Frees a pointer returned by allocate(). Unknown pointers are ignored.
  void free(void* pointer);
  // Marks the block holding `pointer` (a pointer returned by allocate()) as
  // used on `stream`, so its memory is not reused before that work finishes.
  void record_stream(void* pointer, Stream& stream);
  // Returns every cached, unused segment to the driver.
  void empty_cache();
  // Whether `pointer` lies inside a segment of this allocator.
  bool contains(const void* pointer) const;

  AllocatorStats stats() const;
  void reset_peak_stats();
  void reset_accumulated_stats();

  // Memory history (memory_history.h). Enabling again changes the options and
  // keeps what was recorded; disabling keeps it too, for a later snapshot.
  void enable_history(const MemoryHistoryOptions& options);
  void disable_history();
  void clear_history();
  std::vector<MemoryAction> history() const;

  struct BlockSnapshot {
    enum State { kActiveAllocated, kActivePendingFree, kInactive };
    uint64_t address;
    uint64_t size;
    uint64_t requested;
    State state;
    MemoryContext context;  // of its allocation, while recorded
  };
  struct SegmentSnapshot {
    uint64_t address;
    uint64_t total_size;
    int64_t stream;
    bool small;
    uint64_t allocated;  // bytes of active_allocated blocks
    uint64_t active;     // ... and of blocks waiting for other streams
    uint64_t requested;
    std::vector<BlockSnapshot> blocks;  // in address order, covering the segment
  };
  // Every segment the allocator holds, in address order.
  std::vector<SegmentSnapshot> snapshot() const;

  // Bytes the driver still has for this device.
  uint64_t free_device_bytes() const;
  uint64_t capacity_bytes() const;

 private:
  enum class BlockState { kFree, kAllocated, kWaitingForStreams };
  struct Block;
  struct BlockOrder {
    bool operator()(const Block* left, const Block* right) const;
  };
  using Pool = std::set<Block*, BlockOrder>;
  struct PendingFree {
    Block* block;
    std::vector<Event> events;
  };

  static size_t round_size(size_t bytes);
  static size_t segment_size_for(size_t rounded);

  Pool& pool_for(size_t rounded) { return rounded <= kSmallRequestLimit ? small_pool_ : large_pool_; }
  Block* take_cached_block(Pool& pool, Stream& stream, size_t rounded);
  // Whether queued work of the block's stream may still use its memory.
  static bool still_in_use_by_queued_work(const Block* block);
  // Waits (without the lock) for the streams whose queued work still uses a
  // cached segment, so release_cached_segments() can return it; does nothing
  // on a thread that runs queued work.
  void wait_for_cached_segments(std::unique_lock<std::mutex>& lock);
  StatusOr<Block*> reserve_segment(size_t rounded, Stream& stream);
  void split_block(Block* block, size_t rounded, Pool& pool);
  void return_to_pool(Block* block);
  void process_pending_frees(bool wait_for_all, std::unique_lock<std::mutex>& lock);
  // Returns the pool's unused segments to the driver; with
  // `only_completed`, not those that queued work may still use.
  void release_cached_segments(Pool& pool, bool only_completed = true);
  Status out_of_memory_status(size_t bytes, const Status& driver_status) const;
  void update_stats(StatArray AllocatorStats::*stat, bool small, int64_t amount);

  Driver& driver_;
  const int device_;
  mutable std::mutex mutex_;
  Pool small_pool_;
  Pool large_pool_;
  std::unordered_map<const void*, Block*> allocated_blocks_;
  std::map<const char*, size_t> segments_;  // base -> size, for contains()
  std::vector<PendingFree> pending_frees_;
  AllocatorStats stats_;
  MemoryHistory history_;
};

}  // namespace kiln
