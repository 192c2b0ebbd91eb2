// Stream: an in-order queue of device work, served by one worker thread.
//
// enqueue() returns at once; the work runs on the worker after everything
// enqueued before it on the same stream. The host waits only in synchronize()
// (or run_synchronously()). Work returns a Status: the first failure is kept,
// named after the op that failed, and returned by the next synchronize(), which
// clears it, so the stream stays usable after an error.
//
// With `blocking` set (KILN_LAUNCH_BLOCKING=1), enqueue() runs the work in the
// caller before returning and reports its failure directly.
//
// Launch cost: op names are static strings (no allocation per launch), and a
// worker that ran out of work spins for 300 us before sleeping (50 us while
// work is held for it, see deferred work below), so a burst of launches, and
// the host's Python between them, does not pay a thread wake-up each.
//
// A thread that waits for the stream (synchronize(), run_synchronously())
// runs the queued work itself instead of sleeping while the worker runs it:
// the worker hands back what it has not started at the end of its current
// item, and the waiting thread runs the rest in order, as the worker would
// (running_queued_work() is true meanwhile: library calls run on that thread
// alone). The wait then costs no thread hand-off at either end; compiled
// training steps, which end with the device's tail of work, took 2-13 % less
// (docs/history/performance-log.md).
//
// Work run in a thread other than the worker (inline launches, a held region,
// a takeover) runs inside the caller scope, when one is set: the torch layer
// gives the work the dispatch state of a fresh thread there, so the caller's
// own (a Python dispatch mode, autocast) does not reach the ATen calls inside.
//
// An InlineRegion lets one thread run a sequence of launches itself: it
// claims the stream only when the stream is idle, and while it holds it every
// launch, enqueue and synchronous run of that thread on the stream runs at
// once in that thread, in program order. A compiled inference program runs this way
// (program.cc): no hand-off to the worker per step, and its library calls run
// on the caller's thread, the one whose OpenMP team PyTorch's own CPU ops use.
// Work other threads enqueue meanwhile waits for the region to end.
//
// Deferred work: the host may hold work for a stream that it has not handed
// over yet: adaptive eager's open region of pointwise ops (aten/adaptive/),
// which it fuses before submitting. mark_deferred() says so; from then on,
// the next call that submits to, waits for or queries the stream (launch,
// enqueue, run_synchronously, synchronize, query, wait_for_queued_work, an
// InlineRegion) first calls the process's deferred-flush function, which
// submits the held work and calls clear_deferred(). So everything the host
// dispatched reaches the stream in program order, whoever submits next.
// Calls the flush makes itself (on its own thread) do not flush again, and
// work run by a stream worker never flushes: a tensor released by queued
// work may enqueue, and must not wait for a host thread that waits for the
// worker. The worker itself submits held work when it has run dry (after its
// spin for new work, plus kDeferredPatience) while work is held (the host
// went off to do something else): it calls the flush with `from_worker` set,
// and the flush gives up at once if a host thread is busy with the held work.
// The patience is zero: a device idle beside a held op it could run cost
// CNN training steps 15-17 % at 500 us.
// enqueue_without_waiting() does not flush either: its markers (the caching
// allocator's) concern memory that held work keeps alive anyway.
//
// Profiling: while device_trace::recording() (device_trace.h), each item run,
// queued or at once, is timed on the thread that runs it and recorded with
// its name, this stream and the correlation id of the host op that queued it
// (read when it is queued); enqueue_without_waiting's markers are not. While
// not recording, an item costs one relaxed atomic load more.
//
// Thread-safety: all methods may be called from any thread. Work items must
// not enqueue onto or synchronize their own stream.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/device_trace.h"

namespace kiln {

class Stream {
 public:
  using Work = std::function<Status()>;

  Stream(int device, int64_t id, bool blocking);
  ~Stream();  // finishes queued work, then stops the worker
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  int64_t id() const { return id_; }

  // Queues `work`; `name` (an op name such as "aten::add.Tensor", a string with
  // static lifetime) labels it in error messages. Returns ok unless the stream
  // is blocking and the work failed.
  //
  // Back-pressure, as CUDA bounds its launch queue: when kMaxQueued items
  // already wait for the worker, enqueue() waits until the worker takes them,
  // so a host that runs far ahead of the device does not queue unbounded work
  // (and the tensors that work holds). Threads that must not wait enqueue past
  // the bound: stream workers (releasing a tensor may launch), and threads the
  // wait permission refuses (set_wait_permission).
  static constexpr size_t kMaxQueued = 1024;
  Status enqueue(const char* name, Work work);
  // enqueue() that never waits for room: for markers enqueued under other
  // locks (events the caching allocator records while holding its own).
  Status enqueue_without_waiting(const char* name, Work work);

  // Whether the calling thread may wait in enqueue() for room. Unset: every
  // thread but a stream worker may. Kiln's Python module refuses threads that
  // hold the GIL, which a worker may need to release a tensor's Python object.
  using WaitPermission = bool (*)();
  static void set_wait_permission(WaitPermission permission);

  // Runs `work` after all queued work and returns its Status. When the stream
  // is idle the work runs in the calling thread, which avoids a thread hand-off
  // for synchronous copies. An earlier queued failure is returned instead, and
  // `work` does not run (the caller raises that error, as CUDA does at a sync).
  Status run_synchronously(const char* name, const Work& work);

  // Launches work touching about `bytes` bytes. Small work on an idle stream
  // runs at once in the caller: it is ordered after everything queued (there is
  // nothing queued), and handing it to the worker would cost more than doing it.
  // Anything else is enqueued. A failure of inline work is returned directly.
  static constexpr size_t kInlineLaunchBytes = size_t{32} << 10;
  template <typename Function>
  Status launch(const char* name, size_t bytes, Function&& work) {
    submit_deferred();
    if (held_by_this_thread()) return run_held(name, work);
    if (bytes <= kInlineLaunchBytes && try_begin_inline()) {
      Status status = run_device_work_in_caller(name, work);
      end_inline();
      return status.ok() ? status : with_stream_context(name, status);
    }
    return enqueue(name, Work(std::forward<Function>(work)));
  }

  // Runs `work` in the caller if it touches at most `limit` bytes and the
  // stream is idle, storing its Status in `status` and returning true; returns
  // false (running nothing) otherwise, and the caller enqueues. Lets a caller
  // pass work that refers to its locals, copying them only when it enqueues.
  template <typename Function>
  bool run_inline_if_idle(const char* name, size_t bytes, Function&& work, Status& status,
                          size_t limit = kInlineLaunchBytes) {
    submit_deferred();
    if (held_by_this_thread()) {
      status = run_held(name, work);
      return true;
    }
    if (bytes > limit || !try_begin_inline()) return false;
    status = run_device_work_in_caller(name, work);
    end_inline();
    if (!status.ok()) status = with_stream_context(name, status);
    return true;
  }

  // Waits until every queued item has run, running what the worker has not
  // started in the calling thread (see the top). Returns (and clears) the first
  // failure since the last synchronize. In the thread that holds an
  // InlineRegion on this stream, everything it launched has already run, so it
  // returns at once (work of other threads waits for the region to end).
  Status synchronize();

  // Sends a worker that is polling for the next launch to sleep now. Called
  // before work that brings its own threads (a collective's transport), so
  // the polling worker does not take their core.
  void stop_polling() { hush_.fetch_add(1, std::memory_order_release); }

  // Holds the stream for the calling thread while it is idle; see the note at
  // the top. held() is false, and nothing changes, when the stream had work
  // queued or running, a failure pending, or the thread already holds a region; the
  // caller then launches as usual. The thread must not wait for other
  // threads' work on this stream while it holds it.
  class InlineRegion {
   public:
    explicit InlineRegion(Stream& stream);
    ~InlineRegion();
    InlineRegion(const InlineRegion&) = delete;
    InlineRegion& operator=(const InlineRegion&) = delete;
    bool held() const { return held_; }

   private:
    Stream& stream_;
    bool held_ = false;
  };

  // True when no queued work remains. Submits deferred work first.
  bool query();
  // Whether the calling thread holds this stream through an InlineRegion.
  bool held_by_current_thread() const { return held_by_this_thread(); }

  // Counts of queued items, for memory released while queued work may still
  // use it (the caching allocator's fences): submitted() items have been
  // queued so far, and completed(count) is true once the first `count` of
  // them have run. Work run at once (inline, in a held region, blocking)
  // is not counted: it has run by the time the launch returns.
  uint64_t submitted() const { return submitted_.load(std::memory_order_acquire); }
  bool completed(uint64_t count) const {
    return completed_.load(std::memory_order_acquire) >= count;
  }
  // Calls so far that put an order on the stream's work: work handed over
  // by enqueue, launch, run_inline_if_idle (when it ran) and
  // run_synchronously, queued or run at once, and synchronize,
  // wait_for_queued_work and query; enqueue_without_waiting's markers are not
  // counted. Adaptive eager compares two readings to tell whether anything
  // reached the stream between two of its ops.
  uint64_t ordering_points() const { return ordering_points_.load(std::memory_order_acquire); }
  // Queued items that have not finished (the one running included), read
  // without the lock: how far the host is ahead of the device.
  uint64_t items_in_flight() const {
    const uint64_t done = completed_.load(std::memory_order_acquire);
    const uint64_t queued = submitted_.load(std::memory_order_acquire);
    return queued > done ? queued - done : 0;
  }
  // Waits until everything queued so far has run, running it in the calling
  // thread as synchronize() does, but leaves a failure pending for the next
  // synchronize(). Must not be called while running this stream's work.
  void wait_for_queued_work();

  // Runs `run(work)` inside the scope the top of this file describes.
  using CallerScope = Status (*)(void* work, Status (*run)(void* work));
  static void set_caller_scope(CallerScope scope);

  // True while the calling thread runs queued work: a stream's worker, or a
  // waiting thread that took the work over.
  static bool running_queued_work();

  // Deferred work (see the top). The flush function is set once, by the
  // layer that defers work; it must submit or drop everything it holds for
  // `stream` and call clear_deferred().
  using DeferredFlush = void (*)(Stream& stream, bool from_worker);
  static constexpr std::chrono::microseconds kDeferredPatience{0};
  static void set_deferred_flush(DeferredFlush flush);
  void mark_deferred() { deferred_.store(true, std::memory_order_release); }
  void clear_deferred() { deferred_.store(false, std::memory_order_release); }
  bool has_deferred() const { return deferred_.load(std::memory_order_acquire); }
  // Hands held work over now, if there is any; see the top for who skips.
  void submit_deferred() {
    if (deferred_.load(std::memory_order_acquire)) flush_deferred();
  }

 private:
  struct Item {
    const char* name;
    Work work;
    // The host op that queued it, for the profiler (device_trace.h); set
    // only while recording.
    uint64_t correlation = 0;
    bool traced = true;  // false for markers (events), which do no device work
  };

  // The stream this thread holds through an InlineRegion, or null.
  static thread_local Stream* held_stream_;
  bool held_by_this_thread() const { return held_stream_ == this; }
  // Runs `work` at once for the thread holding the stream, naming it on failure.
  template <typename Function>
  Status run_held(const char* name, Function& work) const {
    Status status = run_device_work_in_caller(name, work);
    return status.ok() ? status : with_stream_context(name, status);
  }

  // Claims the idle stream for work run in the caller; false if anything is
  // queued or running, or a failure is pending.
  bool try_begin_inline();
  void end_inline();
  // Runs work in the calling thread. Work must not throw, but a library call
  // inside it might: an escaped exception becomes a Status, not a terminate.
  template <typename Function>
  static Status run_inline(Function& work) {
    try {
      return work();
    } catch (const std::exception& error) {
      return internal_error(error.what());
    } catch (...) {
      return internal_error("unknown exception");
    }
  }

  // run_inline() inside the caller scope, for work run outside the worker.
  static std::atomic<CallerScope> caller_scope_;
  template <typename Function>
  static Status run_in_caller(Function& work) {
    CallerScope scope = caller_scope_.load(std::memory_order_acquire);
    if (scope == nullptr) return run_inline(work);
    void* context = const_cast<void*>(static_cast<const void*>(&work));  // Function may be const
    return scope(context, [](void* erased) { return run_inline(*static_cast<Function*>(erased)); });
  }

  // run_in_caller() for device work (not a wrapper of queued items), timed
  // for the profiler while it records.
  template <typename Function>
  Status run_device_work_in_caller(const char* name, Function& work) const {
    device_trace::Timer timer(name, device_, id_);
    return run_in_caller(work);
  }

  void flush_deferred();
  static std::atomic<DeferredFlush> deferred_flush_;
  std::atomic<bool> deferred_{false};

  Status push(const char* name, Work work, bool may_wait, bool traced = true);
  void worker_loop();
  // Returns with the stream idle (needs mutex_, held through `lock`): takes
  // the queue over from the worker and runs it in the calling thread, or,
  // where this thread may not run work (a stream worker), waits.
  void finish_queued_work(std::unique_lock<std::mutex>& lock);
  // Runs `batch` in order on this thread, keeping the first failure and its
  // name, until `stop` (if given) is set; returns how many items ran.
  size_t run_batch(std::vector<Item>& batch, const std::atomic<bool>* stop, Status& failure,
                          const char*& failed_name);
  // Waits for work without the lock for a short while, then on the condition.
  void wait_for_work(std::unique_lock<std::mutex>& lock);
  Status with_stream_context(const char* name, const Status& status) const;
  void record_failure(const char* name, const Status& status);  // needs mutex_
  Status take_failure();                                                // needs mutex_

  const int device_;
  const int64_t id_;
  const bool blocking_;

  mutable std::mutex mutex_;
  std::condition_variable work_available_;
  std::condition_variable work_done_;
  std::condition_variable room_available_;  // the worker took the queue
  int room_waiters_ = 0;                    // threads waiting in enqueue() for room
  std::vector<Item> queue_;   // the worker takes it whole, one batch per lock
  bool worker_busy_ = false;   // the worker is running an item outside the lock
  bool caller_busy_ = false;   // run_synchronously is running work in its caller
  bool stopping_ = false;
  bool worker_sleeping_ = false;       // the worker waits on work_available_
  // A waiting thread asks the worker to hand back the items it has not started.
  std::atomic<bool> takeover_{false};
  std::atomic<size_t> queued_{0};      // queue_.size(), readable without the lock
  std::atomic<uint64_t> hush_{0};      // bumped by stop_polling()
  std::atomic<uint64_t> submitted_{0};  // items ever queued (bumped under mutex_)
  std::atomic<uint64_t> ordering_points_{0};  // ordering_points()
  std::atomic<uint64_t> completed_{0};  // items that have run, in queue order
  Status first_failure_;
  std::thread worker_;         // started on the first enqueue
};

}  // namespace kiln
