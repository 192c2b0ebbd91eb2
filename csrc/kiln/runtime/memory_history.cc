#include "kiln/runtime/memory_history.h"

#include <chrono>

#include "kiln/runtime/stream.h"

namespace kiln {

void MemoryHistory::enable(const MemoryHistoryOptions& options) {
  options_ = options;
  if (options_.max_entries == 0) options_.max_entries = 1;
  // A smaller ring keeps the newest actions.
  if (ring_.size() > options_.max_entries) {
    std::vector<MemoryAction> ordered = actions();
    ring_.assign(std::make_move_iterator(ordered.end() - options_.max_entries),
                 std::make_move_iterator(ordered.end()));
    next_ = 0;
  }
  const bool alloc_context = options_.context_for_blocks || options_.context_for_allocs;
  alloc_gatherer_.store(alloc_context ? options_.gatherer : nullptr, std::memory_order_relaxed);
  free_gatherer_.store(options_.context_for_frees ? options_.gatherer : nullptr, std::memory_order_relaxed);
  enabled_.store(true, std::memory_order_relaxed);
}

void MemoryHistory::disable() {
  enabled_.store(false, std::memory_order_relaxed);
  alloc_gatherer_.store(nullptr, std::memory_order_relaxed);
  free_gatherer_.store(nullptr, std::memory_order_relaxed);
}

void MemoryHistory::clear() {
  ring_.clear();
  next_ = 0;
}

void MemoryHistory::record(MemoryAction action) {
  if (!enabled() || !options_.record_actions) return;
  if (action.time_us == 0) action.time_us = now_us();
  if (ring_.size() < options_.max_entries) {
    ring_.push_back(std::move(action));
    return;
  }
  ring_[next_] = std::move(action);
  next_ = (next_ + 1) % ring_.size();
}

std::vector<MemoryAction> MemoryHistory::actions() const {
  std::vector<MemoryAction> ordered;
  ordered.reserve(ring_.size());
  for (size_t i = 0; i < ring_.size(); ++i) ordered.push_back(ring_[(next_ + i) % ring_.size()]);
  return ordered;
}

namespace {
MemoryContext gather(MemoryContextGatherer gatherer) {
  // A stream's worker may not wait for the interpreter the gatherer may need.
  if (gatherer == nullptr || Stream::running_queued_work()) return nullptr;
  return gatherer();
}
}  // namespace

MemoryContext MemoryHistory::gather_for_alloc() const {
  return gather(alloc_gatherer_.load(std::memory_order_relaxed));
}

MemoryContext MemoryHistory::gather_for_free() const {
  return gather(free_gatherer_.load(std::memory_order_relaxed));
}

int64_t MemoryHistory::now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace kiln
