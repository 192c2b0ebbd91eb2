// DeviceTrace: what the device ran, recorded for a profiler.
//
// While recording (a profiler that asked for the device's activity is on,
// csrc/kiln/profiler/), every piece of work a Stream runs (and each
// collective of the distributed backend) is recorded as an Activity: the op that queued it, its device and stream, the start and end
// of its run on the device, and the correlation id of the host op that queued
// it, which links the device's timeline to the host's. The host side pushes
// and pops those ids around each op it profiles (push_correlation,
// pop_correlation), on the thread that runs the op; a launch takes the
// innermost one, as CUDA's kernels belong to the innermost op that launched
// them.
//
// Cost: while not recording, a stream pays one relaxed atomic load per item
// (recording()) and nothing else. While recording, two clock reads and one
// append under a mutex per item.
//
// Timestamps are nanoseconds of the system clock since the Unix epoch, the
// clock PyTorch's profiler (Kineto) stamps host ops with.
//
// Thread-safety: all functions may be called from any thread; the
// correlation stack is the calling thread's.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace kiln::device_trace {

struct Activity {
  enum class Kind : uint8_t { kWork, kCollective };
  const char* name = nullptr;  // the op that queued the work (a static string)
  int device = 0;
  int64_t stream = 0;
  uint64_t correlation = 0;    // the queuing host op's id; 0: none was profiled
  int64_t start_ns = 0;        // system clock, since the Unix epoch
  int64_t end_ns = 0;
  bool queued = false;         // ran from the stream's queue, not in the launching call
  // Work a stream ran, or a collective (recorded by the distributed backend:
  // from its start to when Kiln saw it finish).
  Kind kind = Kind::kWork;
};

namespace detail {
inline std::atomic<bool> recording{false};
}  // namespace detail

// Whether activities are being recorded: one relaxed load.
inline bool recording() { return detail::recording.load(std::memory_order_relaxed); }

// Starts recording, dropping anything recorded before.
void start();
// Stops recording; what was recorded stays until take() or start().
void stop();
// Hands over (and forgets) what was recorded.
std::vector<Activity> take();

// The calling thread's stack of profiled host ops.
void push_correlation(uint64_t id);
void pop_correlation();
// The innermost profiled host op of the calling thread, 0 if none.
uint64_t current_correlation();

int64_t now_ns();
void record(const Activity& activity);

// Times work run by a stream; records it on destruction if recording was on
// when it began.
class Timer {
 public:
  // Work queued by the host op `correlation`, run from the stream's queue.
  Timer(const char* name, int device, int64_t stream, uint64_t correlation)
      : active_(recording()) {
    if (!active_) return;
    activity_ = Activity{name, device, stream, correlation, now_ns(), 0, true};
  }
  // Work run at once in the launching call, queued by its current host op.
  Timer(const char* name, int device, int64_t stream, Activity::Kind kind = Activity::Kind::kWork)
      : active_(recording()) {
    if (!active_) return;
    activity_ = Activity{name, device, stream, current_correlation(), now_ns(), 0, false, kind};
  }
  ~Timer() {
    if (!active_) return;
    activity_.end_ns = now_ns();
    record(activity_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

 private:
  bool active_;
  Activity activity_;
};

}  // namespace kiln::device_trace
