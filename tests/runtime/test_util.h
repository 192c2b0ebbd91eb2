// Helpers shared by the runtime tests.
#pragma once

#include <chrono>
#include <future>
#include <string>

#include "kiln/base/status.h"
#include "kiln/runtime/stream.h"

namespace kiln::testing_util {

// A latch the test opens: work queued behind gate.hold(stream) does not run
// until open() is called. Opening twice is harmless. The destructor opens it so
// that a failing test never leaves a stream worker blocked forever.
class Gate {
 public:
  Gate() : future_(promise_.get_future().share()) {}
  ~Gate() { open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  void open() {
    if (!opened_) {
      opened_ = true;
      promise_.set_value();
    }
  }
  void wait() const { future_.wait(); }
  // Ready once open() was called; work may hold it past the gate's life.
  std::shared_future<void> opened() const { return future_; }

  // Queues a work item on `stream` that waits for open().
  Status hold(Stream& stream, const char* name = "test::gate") {
    std::shared_future<void> future = future_;
    return stream.enqueue(name, [future] {
      future.wait();
      return Status();
    });
  }

 private:
  bool opened_ = false;
  std::promise<void> promise_;
  std::shared_future<void> future_;
};

// Whether `future` becomes ready within `timeout`. Used only to check that
// something has NOT happened yet; positive checks wait without a timeout.
template <typename T>
bool ready_within(const std::future<T>& future, std::chrono::milliseconds timeout) {
  return future.wait_for(timeout) == std::future_status::ready;
}

// Spins for about `duration` of real work (no sleep), so the work is measurable.
inline void busy_work(std::chrono::microseconds duration) {
  auto until = std::chrono::steady_clock::now() + duration;
  volatile uint64_t sink = 0;
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<uint64_t>(i);
  }
}

}  // namespace kiln::testing_util
