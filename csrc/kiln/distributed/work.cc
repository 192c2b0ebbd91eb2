#include "kiln/distributed/work.h"

#include <Python.h>

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

#include <stdexcept>

#include "kiln/base/thread_name.h"
#include "kiln/c10/device_guard.h"

namespace kiln::torch_integration::distributed {
namespace {

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error& caught) {
    return caught.what_without_backtrace();
  } catch (const std::exception& caught) {
    return caught.what();
  } catch (...) {
    return "unknown error";
  }
}

// Runs `function` without the GIL when this thread holds it, and takes it
// back afterwards, also when `function` throws.
template <typename Function>
void without_gil(Function&& function) {
  if (!Py_IsInitialized() || !PyGILState_Check()) {
    function();
    return;
  }
  struct Restore {
    PyThreadState* state;
    ~Restore() { PyEval_RestoreThread(state); }
  } restore{PyEval_SaveThread()};
  function();
}

}  // namespace

std::string CollectiveLabel::text() const {
  return std::string(name) + " on rank " + std::to_string(rank) + " of " + std::to_string(size);
}

KilnWork::KilnWork(CollectiveLabel label, c10d::OpType type,
                   std::vector<c10::intrusive_ptr<c10d::Work>> transport,
                   std::vector<at::Tensor> outputs, Finish finish,
                   std::chrono::milliseconds timeout)
    : c10d::Work(label.rank, type, label.name),
      label_(label),
      transport_(std::move(transport)),
      outputs_(std::move(outputs)),
      finish_(std::move(finish)),
      timeout_(timeout),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors())) {
  // A collective run by the transport is device work the profiler shows from
  // here to its completion (ran_in_shared_memory records its own).
  if (device_trace::recording() && !transport_.empty()) {
    const int device = outputs_.empty() ? -1 : outputs_.front().device().index();
    trace_.name = label.name;
    trace_.device = device < 0 ? 0 : device;
    trace_.stream = current_runtime_stream(device).id();
    trace_.correlation = device_trace::current_correlation();
    trace_.start_ns = device_trace::now_ns();
    trace_.queued = true;
    trace_.kind = device_trace::Activity::Kind::kCollective;
  }
}

c10::intrusive_ptr<KilnWork> KilnWork::start(Completer& completer, CollectiveLabel label,
                                             c10d::OpType type,
                                             std::vector<c10::intrusive_ptr<c10d::Work>> transport,
                                             std::vector<at::Tensor> outputs, Finish finish,
                                             std::chrono::milliseconds timeout) {
  auto work = c10::make_intrusive<KilnWork>(label, type, std::move(transport), std::move(outputs),
                                            std::move(finish), timeout);
  work->bell_ = completer.bell();
  completer.submit(work);
  return work;
}

c10::DistBackendError KilnWork::error(const std::string& cause) const {
  return c10::DistBackendError(
      c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
      "kiln: " + label_.text() + " failed (group timeout " + std::to_string(timeout_.count()) +
          " ms): " + cause);
}

void KilnWork::complete() {
  std::exception_ptr failure;
  for (const auto& work : transport_) {
    try {
      // Gloo's wait() throws on failure; a work that returns from wait()
      // without success (reported by state only) fails the collective too.
      bool finished = work->wait();
      if (!failure && work->exception()) failure = work->exception();
      if (!failure && (!finished || !work->isSuccess())) {
        failure = std::make_exception_ptr(std::runtime_error(
            "the transport's work did not complete (a peer may have died or not joined)"));
      }
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (!failure && finish_) {
    try {
      finish_();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (trace_.start_ns != 0) {
    trace_.end_ns = device_trace::now_ns();
    device_trace::record(trace_);
  }
  if (failure) {
    future_->setError(std::make_exception_ptr(error(message_of(failure))));
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

void CompletionBell::ring() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    rung = true;
  }
  ready.notify_one();
}

Completer::Completer() : thread_([this] { loop(); }) {}

Completer::~Completer() {
  {
    std::lock_guard<std::mutex> lock(bell_->mutex);
    stopping_ = true;
  }
  bell_->ready.notify_one();
  // Callbacks the thread runs on completed futures (a Python comm hook) may
  // need the GIL: a caller holding it (Python destroying the process group)
  // lets it go while the thread finishes, as torch's own process-group
  // destructors do. The finished works are then released here, with it.
  without_gil([this] { thread_.join(); });
}

void Completer::submit(c10::intrusive_ptr<KilnWork> work) {
  std::vector<c10::intrusive_ptr<KilnWork>> release;
  bool wake;
  {
    std::lock_guard<std::mutex> lock(bell_->mutex);
    last_submit_ = std::chrono::steady_clock::now();
    queue_.push_back(std::move(work));
    release.swap(finished_);
    wake = idle_;
  }
  if (wake) bell_->ready.notify_one();
  // `release` goes out of scope here, on the caller's thread, without the lock.
}

void Completer::loop() {
  set_current_thread_name("kiln-complete");
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lock(bell_->mutex);
  auto stop_or_ring = [this] { return stopping_ || bell_->rung; };
  std::vector<c10::intrusive_ptr<KilnWork>> batch;
  while (true) {
    if (queue_.empty() && stopping_) return;
    if (queue_.empty() && Clock::now() - last_submit_ >= kIdleAfter) {
      idle_ = true;
      bell_->ready.wait(lock, [&] { return stop_or_ring() || !queue_.empty(); });
      idle_ = false;
      continue;  // a submit only wakes: its work waits for the next pass
    }
    if (!stop_or_ring()) {
      // One pass per period at most, however many works come in (a
      // synchronous 1 KiB all_reduce takes well under a period).
      bell_->ready.wait_for(lock, kCompletionPoll, stop_or_ring);
    }
    // What to take, from the front: everything when stopping or when a
    // future was asked for (its work is somewhere in the queue, and works
    // complete in order), waiting for their transport; otherwise only works
    // whose transport is done, mostly those their callers already completed
    // in wait(). A work still in flight waits for the next pass: blocking on
    // it would wake this thread beside the caller waiting on it.
    const bool everything = stop_or_ring();
    bell_->rung = false;
    size_t take = queue_.size();
    if (!everything) {
      take = 0;
      while (take < queue_.size() && queue_[take]->transport_done()) ++take;
    }
    if (take == 0) continue;
    for (size_t i = 0; i < take; ++i) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lock.unlock();
    for (const auto& work : batch) work->complete_once();  // at once when its caller completed it
    lock.lock();
    for (auto& work : batch) finished_.push_back(std::move(work));
    batch.clear();
  }
}

bool KilnWork::transport_done() const {
  if (future_->completed()) return true;
  for (const auto& work : transport_) {
    if (!work->isCompleted()) return false;
  }
  return true;
}

bool KilnWork::isCompleted() {
  // A caller polling sees completion as soon as the transport is done, not
  // at the completer's next pass. The completer thread may be completing
  // this work at the same moment, running future callbacks that need the GIL
  // (a Python comm hook), so this waits for it without holding the GIL.
  if (!future_->completed() && transport_done()) without_gil([this] { complete_once(); });
  return future_->completed();
}

bool KilnWork::isSuccess() const { return future_->completed() && !future_->hasError(); }

std::exception_ptr KilnWork::exception() const {
  return future_->completed() && future_->hasError() ? future_->exception_ptr() : nullptr;
}

std::vector<at::Tensor> KilnWork::result() { return outputs_; }

bool KilnWork::wait(std::chrono::milliseconds timeout) {
  // The transport enforces the group's timeout; a shorter one asked here is
  // honoured by waiting on the transport's works with it.
  if (timeout != kNoTimeout) {
    for (const auto& work : transport_) {
      try {
        work->wait(timeout);
      } catch (...) {
        throw error(message_of(std::current_exception()));
      }
    }
  }
  complete_once();
  future_->waitAndThrow();  // the collective's error, if it failed
  return true;
}

void KilnWork::synchronize() { wait(); }

c10::intrusive_ptr<c10::ivalue::Future> KilnWork::getFuture() {
  // Someone may wait on the future instead of on this work: the completer
  // thread must complete it as soon as the transport is done.
  if (bell_ != nullptr && !future_->completed()) bell_->ring();
  return future_;
}

}  // namespace kiln::torch_integration::distributed
