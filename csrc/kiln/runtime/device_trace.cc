#include "kiln/runtime/device_trace.h"

#include <chrono>
#include <mutex>

namespace kiln::device_trace {
namespace {

struct Recorded {
  std::mutex mutex;
  std::vector<Activity> activities;
};

Recorded& recorded() {
  static Recorded* instance = new Recorded();  // never destroyed: workers may record at exit
  return *instance;
}

// A fixed stack: profiled ops nest a few levels deep; beyond kDepth the
// innermost ids are not kept, and launches there take the deepest kept one.
constexpr int kDepth = 64;
thread_local uint64_t correlation_stack[kDepth];
thread_local int correlation_depth = 0;

}  // namespace

void start() {
  Recorded& state = recorded();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.activities.clear();
  }
  detail::recording.store(true, std::memory_order_release);
}

void stop() { detail::recording.store(false, std::memory_order_release); }

std::vector<Activity> take() {
  Recorded& state = recorded();
  std::lock_guard<std::mutex> lock(state.mutex);
  std::vector<Activity> taken;
  taken.swap(state.activities);
  return taken;
}

void push_correlation(uint64_t id) {
  if (correlation_depth < kDepth) correlation_stack[correlation_depth] = id;
  ++correlation_depth;
}

void pop_correlation() {
  if (correlation_depth > 0) --correlation_depth;
}

uint64_t current_correlation() {
  if (correlation_depth == 0) return 0;
  return correlation_stack[(correlation_depth < kDepth ? correlation_depth : kDepth) - 1];
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void record(const Activity& activity) {
  Recorded& state = recorded();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.activities.push_back(activity);
}

}  // namespace kiln::device_trace
