// KilnWork: the c10d::Work that every collective of the `kiln` backend returns,
// and Completer, the thread that completes them.
//
// Part of the distributed layer (the top of the C++ stack, beside the
// python bindings); backend.h makes the works, PyTorch's c10d and DDP use
// them.
//
// It wraps the transport's works (Gloo, running on host aliases of device
// memory). When all of them are done, a finishing step runs once (dividing
// for AVG, copying a staged result into the caller's tensor), and the future
// completes with the *device* tensors: DDP takes its gradients from the
// future's value. wait() blocks the host until then; since a kiln device is
// host memory, work the caller enqueues after wait() is ordered after the
// collective. A transport failure (a peer that died, a timeout, a mismatched
// collective) becomes a DistBackendError naming the collective, the rank and
// the group size.
//
// GIL: nothing here acquires a GIL it did not hold. Future callbacks (a Python DDP comm hook)
// run on whichever thread completes the work and take the GIL themselves, so
// a thread that waits for a completion must not hold it: isCompleted() and
// ~Completer() let it go; wait() and synchronize() do not (Python's
// Work.wait releases it before calling; its deprecated synchronize does not).
#pragma once

#include "kiln/runtime/device_trace.h"

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kiln::torch_integration::distributed {

// What a collective is, for error messages: "all_reduce on rank 1 of 2".
// `name` is borrowed and must outlive the work: backend.cc passes literals.
struct CollectiveLabel {
  const char* name;
  int rank;
  int size;
  std::string text() const;
};

class KilnWork;

// How a work asks the completer thread to complete it soon: its future's
// waiters (a DDP comm hook) depend on that thread. Shared by the completer
// and its works, so a work may outlive its backend.
struct CompletionBell {
  std::mutex mutex;  // also guards the completer's queue
  std::condition_variable ready;
  bool rung = false;
  void ring();
};

// Completes a backend's works in the order they started, on one thread: it
// waits for each work's transport, runs its finishing step and completes its
// future. (Gloo offers futures for only some collectives, so completion does
// not rely on them.)
//
// The thread is not woken for every collective. A synchronous collective is
// completed by its caller in wait(), and waking a second thread for it cost a
// 1 KiB all_reduce 60-80 us of its 550 us on two cores. So the thread looks at
// its queue once per kCompletionPoll, and takes from the front only the works
// whose transport is done: mostly works their callers already completed, and
// works nobody waits on, whose finishing step it then runs. It never blocks on
// a work still in flight (that woke it beside the caller waiting on the same
// work, once per collective when collectives take about a period), except
// when a work's future is asked for (getFuture rings it: a DDP comm hook waits
// on the future) or when it stops. After kIdleAfter without a submit it sleeps
// until the next one. isCompleted() completes a work whose transport is done
// itself, so a caller polling it does not wait for the next pass.
//
// The thread never drops the last reference to a work: a work holds device
// tensors whose Python objects need the GIL to be released, and at
// interpreter exit a thread asking for the GIL is ended inside C++ code that
// cannot unwind (the process aborts). Finished works are released by the
// next submit(), on the thread launching collectives, or by the destructor:
// until then a finished work keeps its output tensors alive.
//
// Lifetime: the thread (named "kiln-complete") starts in the constructor; one
// per backend. The destructor marks it stopping, and the thread completes
// every work still queued, waiting for each transport (up to its timeout),
// before it ends; the destructor waits for that without the GIL, then
// releases the finished works. Works hold the bell, not the Completer, so
// they may outlive it.
//
// Thread-safety: submit() and the destructor may be called from any thread;
// the bell's mutex guards the queue, `finished_` and the flags. A work is
// completed under its own lock, with the bell's released.
class Completer {
 public:
  static constexpr std::chrono::milliseconds kCompletionPoll{10};
  static constexpr std::chrono::milliseconds kIdleAfter{100};

  Completer();
  ~Completer();  // completes what was submitted, then stops
  Completer(const Completer&) = delete;
  Completer& operator=(const Completer&) = delete;
  // Queues `work` (shared: the caller keeps its own reference) and releases
  // the works finished since the last submit, on the calling thread, outside
  // the lock. Wakes the thread only when it sleeps idle. Never blocks on a
  // collective.
  void submit(c10::intrusive_ptr<KilnWork> work);
  const std::shared_ptr<CompletionBell>& bell() const { return bell_; }

 private:
  void loop();
  std::shared_ptr<CompletionBell> bell_ = std::make_shared<CompletionBell>();
  std::deque<c10::intrusive_ptr<KilnWork>> queue_;
  std::vector<c10::intrusive_ptr<KilnWork>> finished_;  // released by submit() or ~Completer
  bool stopping_ = false;
  bool idle_ = true;  // asleep until a submit rings
  std::chrono::steady_clock::time_point last_submit_{};
  std::thread thread_;
};

class KilnWork : public c10d::Work {
 public:
  using Finish = std::function<void()>;

  // The work of a collective whose transport works were just started:
  // `finish` runs once they all succeeded, then the future completes with
  // `outputs`. `completer` holds the work until then, even if the caller
  // drops it.
  //
  // Ownership: the work owns `outputs` (the device tensors: they stay alive
  // until the work is released), the transport's works, and `finish` with
  // whatever it captured. Nothing else is kept: backend.h says which inputs
  // the caller keeps alive until the work completes. `finish` and the
  // future's callbacks run on the thread that completes the work: the
  // completer's, or one in wait()/isCompleted(). An exception from `finish`
  // becomes the work's error.
  static c10::intrusive_ptr<KilnWork> start(Completer& completer, CollectiveLabel label,
                                            c10d::OpType type,
                                            std::vector<c10::intrusive_ptr<c10d::Work>> transport,
                                            std::vector<at::Tensor> outputs, Finish finish,
                                            std::chrono::milliseconds timeout);

  KilnWork(CollectiveLabel label, c10d::OpType type,
           std::vector<c10::intrusive_ptr<c10d::Work>> transport, std::vector<at::Tensor> outputs,
           Finish finish, std::chrono::milliseconds timeout);

  // Completes the work now, in the calling thread, when its transport is
  // already done (a collective that ran in the caller): its future is then
  // complete when the collective returns, and a failure is its error.
  void complete_now() { complete_once(); }

  // Never blocks on the transport: when the transport is done it completes
  // the work here (waiting, without the GIL, for a completion already running
  // on another thread).
  bool isCompleted() override;
  // Non-blocking reads of the future: false and null until it completes.
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  // The output tensors, at once, whether or not the collective finished.
  std::vector<at::Tensor> result() override;
  // Blocks the calling thread until the work completes (running the
  // finishing step here if no other thread has) and returns true, or throws
  // the collective's DistBackendError. With a timeout, first waits for each
  // transport work with it, and a transport timeout is thrown as a
  // DistBackendError. Any thread; must not hold the GIL (see the top).
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  // Same as wait(): the host blocks (no stream to order against).
  void synchronize() override;
  // The future that completes with the output tensors (a list) or the error.
  // Asking rings the completer so it completes the work as soon as its
  // transport is done, instead of at its next pass.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::chrono::milliseconds getTimeout() const override { return timeout_; }

 private:
  friend class Completer;
  // Waits for the transport, finishes, and completes the future with the
  // outputs or the error, once: on the completer's thread, or on a thread
  // in wait() that gets there first (a synchronous collective then does not
  // wait for the completer thread to wake).
  void complete();
  // Not std::call_once: glibc's pthread_once makes a futex wake-up system
  // call after every first run, one per collective; an uncontended mutex
  // makes none.
  void complete_once() {
    if (completed_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(completing_);
    if (completed_.load(std::memory_order_relaxed)) return;
    complete();
    completed_.store(true, std::memory_order_release);
  }
  // Whether completing would not wait: the transport's works are all done
  // (or this work already completed). Does not block.
  bool transport_done() const;
  std::mutex completing_;             // held while complete() runs
  std::atomic<bool> completed_{false};  // complete() has run
  c10::DistBackendError error(const std::string& cause) const;

  std::shared_ptr<CompletionBell> bell_;  // set by start()
  CollectiveLabel label_;
  // While a profiler records the device (runtime/device_trace.h): the
  // collective's start, device, stream and queuing op; start_ns 0 otherwise.
  device_trace::Activity trace_;
  std::vector<c10::intrusive_ptr<c10d::Work>> transport_;
  std::vector<at::Tensor> outputs_;
  Finish finish_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace kiln::torch_integration::distributed
