// Event: a marker in a stream's queue, used to order streams and time work.
//
// record(stream) enqueues a marker; the event completes when the stream's
// worker reaches it (and, with timing enabled, notes the time). block(stream)
// makes another stream wait for the most recent record before running anything
// queued after it. An event never recorded counts as complete, as in CUDA.
//
// An Event may be destroyed while its marker is still queued: the marker keeps
// the shared state alive. Thread-safety: all methods may be called from any
// thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "kiln/base/status.h"
#include "kiln/runtime/stream.h"

namespace kiln {

class Event {
 public:
  explicit Event(bool enable_timing = false);

  bool timing_enabled() const { return enable_timing_; }

  // Captures all work queued on `stream` so far. Fails only if the stream is
  // blocking and an earlier failure is pending.
  Status record(Stream& stream);
  // Work queued on `stream` after this call waits for the last record.
  Status block(Stream& stream);
  // True if the last record has completed (or there was none).
  bool query() const;
  // Waits for the last record to complete.
  void synchronize() const;
  // Milliseconds between this event's completion and `end`'s. Both must have
  // timing enabled and have completed a record.
  StatusOr<double> elapsed_milliseconds(const Event& end) const;

  // Whether record() was ever called.
  bool was_recorded() const;

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable completed;
    uint64_t recorded_version = 0;   // number of record() calls
    uint64_t completed_version = 0;  // version of the last marker that ran
    std::chrono::steady_clock::time_point time;
  };

  bool enable_timing_;
  std::shared_ptr<State> state_;
};

}  // namespace kiln
