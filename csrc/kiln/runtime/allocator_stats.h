// Statistics kept by the caching allocators, in the shape PyTorch reports them
// (torch.cuda.memory_stats): each Stat has a current value, a peak, and the
// accumulated totals added and removed since the last reset.
#pragma once

#include <array>
#include <cstdint>

namespace kiln {

struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;  // accumulated increases
  int64_t freed = 0;      // accumulated decreases

  void increase(int64_t amount) {
    current += amount;
    allocated += amount;
    if (current > peak) peak = current;
  }
  void decrease(int64_t amount) {
    current -= amount;
    freed += amount;
  }
  void reset_peak() { peak = current; }
  void reset_accumulated() {
    allocated = 0;
    freed = 0;
  }
};

// Index into a StatArray: the total, then blocks from the small (<= 1 MiB) and
// the large pool.
enum StatPool { kAllPools = 0, kSmallPool = 1, kLargePool = 2 };
using StatArray = std::array<Stat, 3>;

struct AllocatorStats {
  StatArray allocation;       // live allocations handed to users (count)
  StatArray segment;          // segments reserved from the driver (count)
  StatArray active;           // blocks in use or waiting on other streams (count)
  StatArray allocated_bytes;  // bytes handed to users (rounded sizes)
  StatArray reserved_bytes;   // bytes reserved from the driver
  StatArray active_bytes;     // bytes in use or waiting on other streams
  StatArray requested_bytes;  // bytes users asked for (unrounded)
  int64_t num_alloc_retries = 0;  // driver failures retried after freeing the cache
  int64_t num_ooms = 0;           // out-of-memory errors returned
  int64_t num_device_alloc = 0;   // driver segment allocations
  int64_t num_device_free = 0;    // driver segment frees
};

}  // namespace kiln
