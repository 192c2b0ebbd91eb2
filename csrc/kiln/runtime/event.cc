#include "kiln/runtime/event.h"

namespace kiln {

Event::Event(bool enable_timing)
    : enable_timing_(enable_timing), state_(std::make_shared<State>()) {}

Status Event::record(Stream& stream) {
  uint64_t version;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    version = ++state_->recorded_version;
  }
  std::shared_ptr<State> state = state_;
  bool timing = enable_timing_;
  return stream.enqueue_without_waiting("kiln::event_record", [state, version, timing]() {
    auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      // A later record may already have completed on another stream; never go back.
      if (version > state->completed_version) {
        state->completed_version = version;
        if (timing) state->time = now;
      }
    }
    state->completed.notify_all();
    return Status();
  });
}

Status Event::block(Stream& stream) {
  uint64_t version;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    version = state_->recorded_version;
    if (state_->completed_version >= version) return Status();  // nothing to wait for
  }
  std::shared_ptr<State> state = state_;
  return stream.enqueue_without_waiting("kiln::event_wait", [state, version]() {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->completed.wait(lock, [&] { return state->completed_version >= version; });
    return Status();
  });
}

bool Event::query() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->completed_version >= state_->recorded_version;
}

void Event::synchronize() const {
  std::unique_lock<std::mutex> lock(state_->mutex);
  uint64_t version = state_->recorded_version;
  state_->completed.wait(lock, [&] { return state_->completed_version >= version; });
}

bool Event::was_recorded() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->recorded_version > 0;
}

StatusOr<double> Event::elapsed_milliseconds(const Event& end) const {
  if (!enable_timing_ || !end.enable_timing_) {
    return failed_precondition("both events must be created with enable_timing=True");
  }
  std::chrono::steady_clock::time_point start_time, end_time;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->recorded_version == 0 || state_->completed_version < state_->recorded_version) {
      return failed_precondition("the start event has not been recorded or has not completed");
    }
    start_time = state_->time;
  }
  {
    std::lock_guard<std::mutex> lock(end.state_->mutex);
    if (end.state_->recorded_version == 0 ||
        end.state_->completed_version < end.state_->recorded_version) {
      return failed_precondition("the end event has not been recorded or has not completed");
    }
    end_time = end.state_->time;
  }
  return std::chrono::duration<double, std::milli>(end_time - start_time).count();
}

}  // namespace kiln
