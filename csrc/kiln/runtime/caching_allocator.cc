#include "kiln/runtime/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>

#include "kiln/base/logging.h"

namespace kiln {
namespace {
// Requests above this are refused before rounding, which could overflow.
constexpr size_t kMaxRequest = std::numeric_limits<size_t>::max() / 2;
}  // namespace

struct CachingAllocator::Block {
  char* pointer = nullptr;
  size_t size = 0;
  size_t requested = 0;  // bytes the user asked for, while allocated
  Stream* stream = nullptr;
  bool small = false;    // from the small pool
  BlockState state = BlockState::kFree;
  Block* previous = nullptr;  // neighbours within the same segment
  Block* next = nullptr;
  std::set<Stream*> used_on;  // other streams that used it (record_stream)
  // stream->submitted() when last freed: queued work up to that count may
  // still use the memory (while free, for a merged block, the largest).
  uint64_t fence = 0;
  MemoryContext context;  // of its allocation, while the history keeps it
};

bool CachingAllocator::BlockOrder::operator()(const Block* left, const Block* right) const {
  if (left->stream != right->stream) return left->stream < right->stream;
  if (left->size != right->size) return left->size < right->size;
  return left->pointer < right->pointer;
}

CachingAllocator::CachingAllocator(Driver& driver, int device)
    : driver_(driver), device_(device) {}

CachingAllocator::~CachingAllocator() {
  // The streams have finished their work: a private runtime destroys them
  // first, and the process-wide one is never destroyed.
  std::lock_guard<std::mutex> lock(mutex_);
  history_.disable();  // its actions would name streams already destroyed
  release_cached_segments(small_pool_, /*only_completed=*/false);
  release_cached_segments(large_pool_, /*only_completed=*/false);
}

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes < kMinimumBlockSize) return kMinimumBlockSize;
  return (bytes + kMinimumBlockSize - 1) / kMinimumBlockSize * kMinimumBlockSize;
}

size_t CachingAllocator::segment_size_for(size_t rounded) {
  if (rounded <= kSmallRequestLimit) return kSmallSegmentSize;
  if (rounded < kMidRequestLimit) return kLargeSegmentSize;
  return (rounded + kSegmentRounding - 1) / kSegmentRounding * kSegmentRounding;
}

void CachingAllocator::update_stats(StatArray AllocatorStats::*stat, bool small, int64_t amount) {
  StatArray& array = stats_.*stat;
  for (int index : {int(kAllPools), small ? int(kSmallPool) : int(kLargePool)}) {
    if (amount >= 0) array[index].increase(amount);
    else array[index].decrease(-amount);
  }
}

CachingAllocator::Block* CachingAllocator::take_cached_block(Pool& pool, Stream& stream,
                                                             size_t rounded) {
  Block key;
  key.stream = &stream;
  key.size = rounded;
  // Work running on a stream's thread is ordered at its own place in the
  // queue: the memory of blocks freed behind it may still be used by work
  // queued after it. The host's allocations are ordered after all of it.
  const bool ordered_after_queue = !Stream::running_queued_work();
  for (auto found = pool.lower_bound(&key); found != pool.end() && (*found)->stream == &stream;
       ++found) {
    Block* block = *found;
    // A huge cached block (bigger than a whole 20 MiB mid-size segment, so it
    // came from an oversize request) should not be tied up by a mid-size
    // request: that would pin the huge segment for the life of a small block.
    // Blocks of up to 20 MiB are exactly what mid-size requests are carved from.
    if (!block->small && block->size > kLargeSegmentSize && rounded < kMidRequestLimit) {
      return nullptr;
    }
    if (!ordered_after_queue && still_in_use_by_queued_work(block)) continue;
    pool.erase(found);
    return block;
  }
  return nullptr;
}

bool CachingAllocator::still_in_use_by_queued_work(const Block* block) {
  return !block->stream->completed(block->fence);
}

StatusOr<CachingAllocator::Block*> CachingAllocator::reserve_segment(size_t rounded,
                                                                     Stream& stream) {
  size_t segment_size = segment_size_for(rounded);
  StatusOr<void*> memory = driver_.allocate_segment(device_, segment_size);
  if (!memory.ok()) return memory.status();
  KILN_LOG(kDebug, "kiln:" + std::to_string(device_) + " reserved a segment of " +
                       std::to_string(segment_size) + " bytes");
  auto* block = new Block();
  block->pointer = static_cast<char*>(memory.value());
  block->size = segment_size;
  block->stream = &stream;
  block->small = rounded <= kSmallRequestLimit;
  segments_.emplace(block->pointer, segment_size);
  if (history_.enabled()) {
    history_.record(MemoryAction{MemoryAction::kSegmentAlloc, reinterpret_cast<uint64_t>(block->pointer),
                                 segment_size, stream.id()});
  }
  stats_.num_device_alloc += 1;
  update_stats(&AllocatorStats::segment, block->small, 1);
  update_stats(&AllocatorStats::reserved_bytes, block->small, static_cast<int64_t>(segment_size));
  return block;
}

void CachingAllocator::split_block(Block* block, size_t rounded, Pool& pool) {
  size_t remaining = block->size - rounded;
  size_t worth_keeping = block->small ? kMinimumBlockSize : kSmallRequestLimit + 1;
  if (remaining < worth_keeping) return;
  auto* rest = new Block();
  rest->pointer = block->pointer + rounded;
  rest->size = remaining;
  rest->stream = block->stream;
  rest->small = block->small;
  rest->fence = block->fence;
  rest->previous = block;
  rest->next = block->next;
  if (block->next != nullptr) block->next->previous = rest;
  block->next = rest;
  block->size = rounded;
  pool.insert(rest);
}

StatusOr<void*> CachingAllocator::allocate(size_t bytes, Stream& stream) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  MemoryContext context = history_.gather_for_alloc();  // before the lock: it may wait for Python
  std::unique_lock<std::mutex> lock(mutex_);
  if (bytes > kMaxRequest) {
    // Rounding would overflow size_t (and hand out a tiny block); no device
    // has this much memory anyway.
    stats_.num_ooms += 1;
    return out_of_memory_status(bytes, out_of_memory("the request exceeds any device's size"));
  }
  process_pending_frees(/*wait_for_all=*/false, lock);
  size_t rounded = round_size(bytes);
  Pool& pool = pool_for(rounded);
  Block* block = take_cached_block(pool, stream, rounded);
  if (block == nullptr) {
    StatusOr<Block*> reserved = reserve_segment(rounded, stream);
    if (!reserved.ok() && reserved.status().code() == StatusCode::kOutOfMemory) {
      // Give the cache back to the driver (after blocks used on other streams
      // are released) and try once more.
      stats_.num_alloc_retries += 1;
      process_pending_frees(/*wait_for_all=*/true, lock);
      wait_for_cached_segments(lock);
      release_cached_segments(small_pool_);
      release_cached_segments(large_pool_);
      reserved = reserve_segment(rounded, stream);
    }
    if (!reserved.ok()) {
      stats_.num_ooms += 1;
      MemoryAction failed{MemoryAction::kOutOfMemory, 0, bytes, stream.id()};
      failed.device_free = free_device_bytes();
      failed.context = history_.keeps_alloc_context() ? context : nullptr;
      history_.record(std::move(failed));
      return out_of_memory_status(bytes, reserved.status());
    }
    block = reserved.value();
  }
  split_block(block, rounded, pool);
  block->state = BlockState::kAllocated;
  block->requested = bytes;
  if (history_.enabled()) {
    MemoryAction action{MemoryAction::kAlloc, reinterpret_cast<uint64_t>(block->pointer), block->size,
                        stream.id()};
    if (history_.keeps_alloc_context()) action.context = context;
    history_.record(std::move(action));
    if (history_.keeps_block_context()) block->context = std::move(context);
  }
  allocated_blocks_.emplace(block->pointer, block);
  update_stats(&AllocatorStats::allocation, block->small, 1);
  update_stats(&AllocatorStats::active, block->small, 1);
  update_stats(&AllocatorStats::allocated_bytes, block->small, static_cast<int64_t>(block->size));
  update_stats(&AllocatorStats::active_bytes, block->small, static_cast<int64_t>(block->size));
  update_stats(&AllocatorStats::requested_bytes, block->small, static_cast<int64_t>(bytes));
  return static_cast<void*>(block->pointer);
}

void CachingAllocator::free(void* pointer) {
  if (pointer == nullptr) return;
  MemoryContext context = history_.gather_for_free();  // before the lock: it may wait for Python
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = allocated_blocks_.find(pointer);
  if (found == allocated_blocks_.end()) return;
  Block* block = found->second;
  allocated_blocks_.erase(found);
  if (history_.enabled()) {
    history_.record(MemoryAction{MemoryAction::kFreeRequested, reinterpret_cast<uint64_t>(block->pointer),
                                 block->size, block->stream->id(), 0, 0, std::move(context)});
  }
  update_stats(&AllocatorStats::allocation, block->small, -1);
  update_stats(&AllocatorStats::allocated_bytes, block->small, -static_cast<int64_t>(block->size));
  update_stats(&AllocatorStats::requested_bytes, block->small,
               -static_cast<int64_t>(block->requested));
  block->requested = 0;
  block->fence = block->stream->submitted();
  if (block->used_on.empty()) {
    return_to_pool(block);
    return;
  }
  PendingFree pending{block, {}};
  for (Stream* other : block->used_on) {
    pending.events.emplace_back();
    pending.events.back().record(*other);
  }
  block->used_on.clear();
  block->state = BlockState::kWaitingForStreams;
  pending_frees_.push_back(std::move(pending));
}

void CachingAllocator::record_stream(void* pointer, Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = allocated_blocks_.find(pointer);
  if (found == allocated_blocks_.end()) return;
  if (found->second->stream != &stream) found->second->used_on.insert(&stream);
}

void CachingAllocator::return_to_pool(Block* block) {
  Pool& pool = block->small ? small_pool_ : large_pool_;
  update_stats(&AllocatorStats::active, block->small, -1);
  update_stats(&AllocatorStats::active_bytes, block->small, -static_cast<int64_t>(block->size));
  block->state = BlockState::kFree;
  block->context = nullptr;
  if (history_.enabled()) {
    history_.record(MemoryAction{MemoryAction::kFreeCompleted, reinterpret_cast<uint64_t>(block->pointer),
                                 block->size, block->stream->id()});
  }
  // Merge with free neighbours so the segment can be reused whole.
  if (Block* before = block->previous; before != nullptr && before->state == BlockState::kFree) {
    pool.erase(before);
    before->size += block->size;
    before->fence = std::max(before->fence, block->fence);
    before->next = block->next;
    if (block->next != nullptr) block->next->previous = before;
    delete block;
    block = before;
  }
  if (Block* after = block->next; after != nullptr && after->state == BlockState::kFree) {
    pool.erase(after);
    block->size += after->size;
    block->fence = std::max(block->fence, after->fence);
    block->next = after->next;
    if (after->next != nullptr) after->next->previous = block;
    delete after;
  }
  pool.insert(block);
}

void CachingAllocator::process_pending_frees(bool wait_for_all,
                                             std::unique_lock<std::mutex>& lock) {
  if (pending_frees_.empty()) return;
  if (wait_for_all) {
    // Wait without the lock: a stream worker may need it to free memory
    // before it reaches the event.
    std::vector<Event> events;
    for (const PendingFree& pending : pending_frees_) {
      events.insert(events.end(), pending.events.begin(), pending.events.end());
    }
    lock.unlock();
    for (const Event& event : events) event.synchronize();
    lock.lock();
  }
  auto still_waiting = std::partition(
      pending_frees_.begin(), pending_frees_.end(), [](const PendingFree& pending) {
        return !std::all_of(pending.events.begin(), pending.events.end(),
                            [](const Event& event) { return event.query(); });
      });
  for (auto it = still_waiting; it != pending_frees_.end(); ++it) return_to_pool(it->block);
  pending_frees_.erase(still_waiting, pending_frees_.end());
}

void CachingAllocator::wait_for_cached_segments(std::unique_lock<std::mutex>& lock) {
  if (Stream::running_queued_work()) return;  // its own stream's work waits for it
  std::set<Stream*> streams;
  for (Pool* pool : {&small_pool_, &large_pool_}) {
    for (const Block* block : *pool) {
      bool whole_segment = block->previous == nullptr && block->next == nullptr;
      if (whole_segment && still_in_use_by_queued_work(block)) streams.insert(block->stream);
    }
  }
  if (streams.empty()) return;
  // Without the lock: the queued work frees memory as it finishes.
  lock.unlock();
  for (Stream* stream : streams) stream->wait_for_queued_work();
  lock.lock();
}

void CachingAllocator::release_cached_segments(Pool& pool, bool only_completed) {
  for (auto it = pool.begin(); it != pool.end();) {
    Block* block = *it;
    if (block->previous != nullptr || block->next != nullptr ||
        (only_completed && still_in_use_by_queued_work(block))) {
      ++it;  // part of a segment still in use, or queued work may still use it
      continue;
    }
    it = pool.erase(it);
    if (history_.enabled()) {
      history_.record(MemoryAction{MemoryAction::kSegmentFree, reinterpret_cast<uint64_t>(block->pointer),
                                   block->size, block->stream->id()});
    }
    driver_.free_segment(device_, block->pointer, block->size);
    segments_.erase(block->pointer);
    stats_.num_device_free += 1;
    update_stats(&AllocatorStats::segment, block->small, -1);
    update_stats(&AllocatorStats::reserved_bytes, block->small, -static_cast<int64_t>(block->size));
    delete block;
  }
}

void CachingAllocator::empty_cache() {
  std::unique_lock<std::mutex> lock(mutex_);
  process_pending_frees(/*wait_for_all=*/false, lock);
  wait_for_cached_segments(lock);
  release_cached_segments(small_pool_);
  release_cached_segments(large_pool_);
}

bool CachingAllocator::contains(const void* pointer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* address = static_cast<const char*>(pointer);
  auto after = segments_.upper_bound(address);
  if (after == segments_.begin()) return false;
  --after;
  return address < after->first + after->second;
}

namespace {
std::string format_bytes(uint64_t bytes) {
  char text[64];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  } else {
    std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  }
  return text;
}
}  // namespace

Status CachingAllocator::out_of_memory_status(size_t bytes, const Status& driver_status) const {
  uint64_t capacity = capacity_bytes();
  uint64_t reserved = driver_.reserved_bytes(device_);
  std::string message =
      "Tried to allocate " + format_bytes(bytes) + ". kiln:" + std::to_string(device_) +
      " has a total capacity of " + format_bytes(capacity) + " of which " +
      format_bytes(capacity > reserved ? capacity - reserved : 0) + " is free. " +
      format_bytes(static_cast<uint64_t>(stats_.allocated_bytes[kAllPools].current)) +
      " is allocated by PyTorch, and " +
      format_bytes(reserved - static_cast<uint64_t>(stats_.allocated_bytes[kAllPools].current)) +
      " is reserved by PyTorch but unallocated. (" + driver_status.message() +
      "; set KILN_DEVICE_MEMORY to change the capacity)";
  return out_of_memory(message);
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (StatArray* array : {&stats_.allocation, &stats_.segment, &stats_.active,
                           &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
                           &stats_.requested_bytes}) {
    for (Stat& stat : *array) stat.reset_peak();
  }
}

void CachingAllocator::reset_accumulated_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (StatArray* array : {&stats_.allocation, &stats_.segment, &stats_.active,
                           &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
                           &stats_.requested_bytes}) {
    for (Stat& stat : *array) stat.reset_accumulated();
  }
  stats_.num_alloc_retries = 0;
  stats_.num_ooms = 0;
  stats_.num_device_alloc = 0;
  stats_.num_device_free = 0;
}

void CachingAllocator::enable_history(const MemoryHistoryOptions& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  history_.enable(options);
}

void CachingAllocator::disable_history() {
  std::lock_guard<std::mutex> lock(mutex_);
  history_.disable();
}

void CachingAllocator::clear_history() {
  std::lock_guard<std::mutex> lock(mutex_);
  history_.clear();
}

std::vector<MemoryAction> CachingAllocator::history() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return history_.actions();
}

std::vector<CachingAllocator::SegmentSnapshot> CachingAllocator::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  // Every block by address: the free ones are in the pools, the others in
  // allocated_blocks_ and pending_frees_; a segment's blocks chain from its base.
  std::unordered_map<const char*, const Block*> blocks;
  for (const Pool* pool : {&small_pool_, &large_pool_}) {
    for (const Block* block : *pool) blocks.emplace(block->pointer, block);
  }
  for (const auto& [pointer, block] : allocated_blocks_) blocks.emplace(block->pointer, block);
  for (const PendingFree& pending : pending_frees_) blocks.emplace(pending.block->pointer, pending.block);
  std::vector<SegmentSnapshot> segments;
  for (const auto& [base, size] : segments_) {
    auto first = blocks.find(base);
    if (first == blocks.end()) continue;  // cannot happen: a segment's base is always a block
    SegmentSnapshot segment{reinterpret_cast<uint64_t>(base), size, first->second->stream->id(),
                            first->second->small, 0, 0, 0, {}};
    for (const Block* block = first->second; block != nullptr; block = block->next) {
      BlockSnapshot::State state = block->state == BlockState::kAllocated ? BlockSnapshot::kActiveAllocated
                                   : block->state == BlockState::kWaitingForStreams
                                       ? BlockSnapshot::kActivePendingFree
                                       : BlockSnapshot::kInactive;
      if (state == BlockSnapshot::kActiveAllocated) segment.allocated += block->size;
      if (state != BlockSnapshot::kInactive) segment.active += block->size;
      segment.requested += block->requested;
      segment.blocks.push_back(BlockSnapshot{reinterpret_cast<uint64_t>(block->pointer), block->size,
                                             block->requested, state, block->context});
    }
    segments.push_back(std::move(segment));
  }
  return segments;
}

uint64_t CachingAllocator::free_device_bytes() const {
  uint64_t capacity = capacity_bytes();
  uint64_t reserved = driver_.reserved_bytes(device_);
  return capacity > reserved ? capacity - reserved : 0;
}

uint64_t CachingAllocator::capacity_bytes() const {
  return driver_.properties(device_).total_memory;
}

}  // namespace kiln
