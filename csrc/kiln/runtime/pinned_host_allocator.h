// PinnedHostAllocator: host memory for pin_memory() and non_blocking copies.
//
// A non_blocking copy between a pinned host buffer and the device is queued
// on a stream and returns at once, so the host buffer must not be reused until
// the copy ran. Blocks are therefore cached: free() records an event on every
// stream that used the block (record_stream) and the block is reused only
// after those events complete. Sizes are rounded up to a power of two (at
// least 4 KiB), so a cached block serves any request of its size class.
//
// On the host target no page-locking is needed for correctness; the memory is
// page-aligned and mapped by the runtime, and is_pinned() answers for any
// address inside a live or cached block.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/event.h"
#include "kiln/runtime/stream.h"

namespace kiln {

struct PinnedHostStats {
  int64_t allocated_bytes = 0;  // in live blocks (rounded)
  int64_t reserved_bytes = 0;   // mapped, live or cached
  int64_t allocations = 0;      // live blocks
  int64_t segments = 0;         // mapped blocks
  int64_t total_allocations = 0;
};

class PinnedHostAllocator {
 public:
  PinnedHostAllocator() = default;
  ~PinnedHostAllocator();  // unmaps cached blocks; live blocks are leaked
  PinnedHostAllocator(const PinnedHostAllocator&) = delete;
  PinnedHostAllocator& operator=(const PinnedHostAllocator&) = delete;

  // nullptr for zero bytes; kOutOfMemory if the host refuses the mapping.
  StatusOr<void*> allocate(size_t bytes);
  void free(void* pointer);
  void record_stream(void* pointer, Stream& stream);
  bool is_pinned(const void* pointer) const;
  // Unmaps every cached block whose streams are done with it.
  void empty_cache();
  PinnedHostStats stats() const;

 private:
  struct Block {
    size_t size = 0;
    bool in_use = false;
    std::set<Stream*> used_on;
    std::vector<Event> pending;  // events to wait for before reuse
  };

  static size_t round_size(size_t bytes);
  bool reusable(Block& block) const;

  mutable std::mutex mutex_;
  std::map<const char*, Block> blocks_;          // base -> block, live and cached
  std::multimap<size_t, char*> cached_by_size_;  // size -> base of a cached block
  PinnedHostStats stats_;
};

}  // namespace kiln
