#include "kiln/runtime/pinned_host_allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

namespace kiln {

PinnedHostAllocator::~PinnedHostAllocator() { empty_cache(); }

size_t PinnedHostAllocator::round_size(size_t bytes) {
  return std::bit_ceil(std::max<size_t>(bytes, 4096));
}

bool PinnedHostAllocator::reusable(Block& block) const {
  if (block.in_use) return false;
  bool done = std::all_of(block.pending.begin(), block.pending.end(),
                          [](const Event& event) { return event.query(); });
  if (done) block.pending.clear();
  return done;
}

StatusOr<void*> PinnedHostAllocator::allocate(size_t bytes) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  if (bytes > std::numeric_limits<size_t>::max() / 2 + 1) {  // no power of two fits in size_t
    return out_of_memory("could not map " + std::to_string(bytes) +
                         " bytes of pinned host memory: the request is too large");
  }
  size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  auto [first, last] = cached_by_size_.equal_range(size);
  for (auto it = first; it != last; ++it) {
    Block& block = blocks_.at(it->second);
    if (!reusable(block)) continue;
    char* base = it->second;
    cached_by_size_.erase(it);
    block.in_use = true;
    stats_.allocated_bytes += static_cast<int64_t>(size);
    stats_.allocations += 1;
    stats_.total_allocations += 1;
    return static_cast<void*>(base);
  }
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    return out_of_memory("could not map " + std::to_string(size) +
                         " bytes of pinned host memory: " + std::strerror(errno));
  }
  Block& block = blocks_[static_cast<const char*>(memory)];
  block.size = size;
  block.in_use = true;
  stats_.allocated_bytes += static_cast<int64_t>(size);
  stats_.reserved_bytes += static_cast<int64_t>(size);
  stats_.allocations += 1;
  stats_.segments += 1;
  stats_.total_allocations += 1;
  return memory;
}

void PinnedHostAllocator::free(void* pointer) {
  if (pointer == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = blocks_.find(static_cast<const char*>(pointer));
  if (found == blocks_.end() || !found->second.in_use) return;
  Block& block = found->second;
  for (Stream* stream : block.used_on) {
    block.pending.emplace_back();
    block.pending.back().record(*stream);
  }
  block.used_on.clear();
  block.in_use = false;
  cached_by_size_.emplace(block.size, static_cast<char*>(pointer));
  stats_.allocated_bytes -= static_cast<int64_t>(block.size);
  stats_.allocations -= 1;
}

void PinnedHostAllocator::record_stream(void* pointer, Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* address = static_cast<const char*>(pointer);
  auto after = blocks_.upper_bound(address);
  if (after == blocks_.begin()) return;
  --after;
  if (address < after->first + after->second.size && after->second.in_use) {
    after->second.used_on.insert(&stream);
  }
}

bool PinnedHostAllocator::is_pinned(const void* pointer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* address = static_cast<const char*>(pointer);
  auto after = blocks_.upper_bound(address);
  if (after == blocks_.begin()) return false;
  --after;
  return address < after->first + after->second.size;
}

void PinnedHostAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = cached_by_size_.begin(); it != cached_by_size_.end();) {
    auto block = blocks_.find(it->second);
    if (!reusable(block->second)) {
      ++it;
      continue;
    }
    munmap(it->second, block->second.size);
    stats_.reserved_bytes -= static_cast<int64_t>(block->second.size);
    stats_.segments -= 1;
    blocks_.erase(block);
    it = cached_by_size_.erase(it);
  }
}

PinnedHostStats PinnedHostAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace kiln
