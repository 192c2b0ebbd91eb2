#include "kiln/runtime/stream.h"

#include <chrono>
#include <exception>
#include <string>
#include <thread>

#include "kiln/base/thread_name.h"

namespace kiln {

Stream::Stream(int device, int64_t id, bool blocking)
    : device_(device), id_(id), blocking_(blocking) {}

Stream::~Stream() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_available_.notify_all();
  room_available_.notify_all();
  if (worker_.joinable()) worker_.join();
}


// How long an idle worker polls for new work before it sleeps. Launches come in
// bursts (one per op of a model step); waking a sleeping thread costs a system
// call on the launching side and several microseconds of latency. Small
// transformers' inference, where the host is the bottleneck, leaves gaps of
// 50-300 us between launches (Python between ops): with 300 us instead of
// 50 us, T5 and Gemma inference steps took 5-9 % less and OPT's 2 % less, the
// host no longer waking the worker (5 interleaved processes each). The spin
// yields the core to any other runnable thread.
constexpr std::chrono::microseconds kIdleSpin{300};
// With work held for the stream (adaptive eager's open region), the worker
// spins only this long, then submits that work itself (wait_for_work): the
// device would otherwise sit idle beside work it could run.
constexpr std::chrono::microseconds kHeldWorkSpin{50};

Status Stream::with_stream_context(const char* name, const Status& status) const {
  return status.with_context(std::string(name) + " failed on kiln:" + std::to_string(device_) +
                             " stream " + std::to_string(id_));
}

void Stream::record_failure(const char* name, const Status& status) {
  if (!first_failure_.ok()) return;  // keep the first, it is the cause
  first_failure_ = with_stream_context(name, status);
}

Status Stream::take_failure() {
  Status failure = first_failure_;
  first_failure_ = Status();
  return failure;
}

thread_local Stream* Stream::held_stream_ = nullptr;

Stream::InlineRegion::InlineRegion(Stream& stream) : stream_(stream) {
  stream.submit_deferred();
  if (held_stream_ != nullptr || !stream.try_begin_inline()) return;  // one region per thread
  held_ = true;
  held_stream_ = &stream;
}

Stream::InlineRegion::~InlineRegion() {
  if (!held_) return;
  held_stream_ = nullptr;
  stream_.end_inline();
}

namespace {

std::atomic<Stream::WaitPermission> wait_permission{nullptr};
thread_local bool on_stream_worker = false;

bool may_wait_for_room() {
  if (on_stream_worker) return false;
  Stream::WaitPermission permission = wait_permission.load(std::memory_order_acquire);
  return permission == nullptr || permission();
}

}  // namespace

bool Stream::running_queued_work() { return on_stream_worker; }

std::atomic<Stream::DeferredFlush> Stream::deferred_flush_{nullptr};

void Stream::set_deferred_flush(DeferredFlush flush) {
  deferred_flush_.store(flush, std::memory_order_release);
}

namespace {
thread_local const Stream* flushing_stream = nullptr;  // the flush running on this thread
}  // namespace

void Stream::flush_deferred() {
  if (on_stream_worker || flushing_stream == this) return;
  DeferredFlush flush = deferred_flush_.load(std::memory_order_acquire);
  if (flush == nullptr) return;
  const Stream* outer = flushing_stream;
  flushing_stream = this;
  flush(*this, /*from_worker=*/false);
  flushing_stream = outer;
}

std::atomic<Stream::CallerScope> Stream::caller_scope_{nullptr};

void Stream::set_caller_scope(CallerScope scope) {
  caller_scope_.store(scope, std::memory_order_release);
}

void Stream::set_wait_permission(WaitPermission permission) {
  wait_permission.store(permission, std::memory_order_release);
}

Status Stream::enqueue(const char* name, Work work) {
  submit_deferred();
  ordering_points_.fetch_add(1, std::memory_order_acq_rel);
  return push(name, std::move(work), true);
}

Status Stream::enqueue_without_waiting(const char* name, Work work) {
  return push(name, std::move(work), false, /*traced=*/false);
}

Status Stream::push(const char* name, Work work, bool may_wait, bool traced) {
  if (held_by_this_thread()) {
    if (traced) return run_held(name, work);
    Status status = run_in_caller(work);  // a marker: no device work for the profiler
    return status.ok() ? status : with_stream_context(name, status);
  }
  if (blocking_) return run_synchronously(name, work);
  bool wake;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (queue_.size() >= kMaxQueued && may_wait && may_wait_for_room()) {
      ++room_waiters_;
      room_available_.wait(lock, [this] { return queue_.size() < kMaxQueued || stopping_; });
      --room_waiters_;
    }
    queue_.push_back(Item{name, std::move(work),
                          device_trace::recording() ? device_trace::current_correlation() : 0, traced});
    queued_.store(queue_.size(), std::memory_order_release);
    submitted_.fetch_add(1, std::memory_order_release);
    if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
    wake = worker_sleeping_;
  }
  if (wake) work_available_.notify_one();
  return Status();
}

Status Stream::run_synchronously(const char* name, const Work& work) {
  submit_deferred();
  if (held_by_this_thread()) return run_held(name, work);
  std::unique_lock<std::mutex> lock(mutex_);
  finish_queued_work(lock);
  Status earlier = take_failure();
  if (!earlier.ok()) return earlier;
  caller_busy_ = true;
  ordering_points_.fetch_add(1, std::memory_order_acq_rel);
  lock.unlock();
  Status status = run_device_work_in_caller(name, work);
  end_inline();
  return status.ok() ? status : with_stream_context(name, status);
}

bool Stream::try_begin_inline() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!queue_.empty() || worker_busy_ || caller_busy_ || !first_failure_.ok()) return false;
  caller_busy_ = true;
  ordering_points_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void Stream::end_inline() {
  // Work queued meanwhile waited for this caller: hand it to the worker.
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    caller_busy_ = false;
    wake = !queue_.empty() && worker_sleeping_;
  }
  if (wake) work_available_.notify_one();
  work_done_.notify_all();
}

Status Stream::synchronize() {
  submit_deferred();
  ordering_points_.fetch_add(1, std::memory_order_acq_rel);
  std::unique_lock<std::mutex> lock(mutex_);
  if (held_by_this_thread()) return take_failure();
  finish_queued_work(lock);
  return take_failure();
}

void Stream::wait_for_queued_work() {
  submit_deferred();
  ordering_points_.fetch_add(1, std::memory_order_acq_rel);
  std::unique_lock<std::mutex> lock(mutex_);
  if (held_by_this_thread()) return;  // everything it launched has run
  finish_queued_work(lock);
}

void Stream::finish_queued_work(std::unique_lock<std::mutex>& lock) {
  auto idle = [this] { return queue_.empty() && !worker_busy_ && !caller_busy_; };
  if (on_stream_worker) {  // a worker runs its own stream's work only
    work_done_.wait(lock, idle);
    return;
  }
  std::vector<Item> batch;
  while (!idle()) {
    if (caller_busy_) {  // another thread runs the work: wait for it
      work_done_.wait(lock, [this] { return !caller_busy_; });
      continue;
    }
    if (worker_busy_) {  // the worker hands back the rest after its current item
      takeover_.store(true, std::memory_order_release);
      work_done_.wait(lock, [this] { return !worker_busy_; });
      continue;
    }
    takeover_.store(false, std::memory_order_relaxed);
    caller_busy_ = true;
    batch.swap(queue_);
    queued_.store(0, std::memory_order_release);
    if (room_waiters_ > 0) room_available_.notify_all();
    lock.unlock();
    Status failure;
    const char* failed_name = nullptr;
    // As on the worker: a launch from inside the work (a tensor's release)
    // queues behind it and must not wait for room this thread would make.
    on_stream_worker = true;
    auto run_all = [&] {
      run_batch(batch, nullptr, failure, failed_name);
      return Status();
    };
    run_in_caller(run_all);
    on_stream_worker = false;
    batch.clear();
    lock.lock();
    caller_busy_ = false;
    if (!failure.ok()) record_failure(failed_name, failure);
  }
  takeover_.store(false, std::memory_order_relaxed);
  work_done_.notify_all();  // other waiters of this stream
}

size_t Stream::run_batch(std::vector<Item>& batch, const std::atomic<bool>* stop, Status& failure,
                         const char*& failed_name) {
  size_t next = 0;
  for (; next < batch.size(); ++next) {
    if (stop != nullptr && stop->load(std::memory_order_acquire)) break;
    Item& item = batch[next];
    Status status;
    if (item.traced && device_trace::recording()) {
      device_trace::Timer timer(item.name, device_, id_, item.correlation);
      status = run_inline(item.work);
    } else {
      status = run_inline(item.work);
    }
    // Release what the work captured (tensors whose deleters may free memory
    // and enqueue onto streams) before taking the lock again.
    item.work = nullptr;
    completed_.fetch_add(1, std::memory_order_release);
    if (!status.ok() && failure.ok()) {
      failure = status;
      failed_name = item.name;
    }
  }
  return next;
}

bool Stream::query() {
  submit_deferred();  // held work is work not done
  ordering_points_.fetch_add(1, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.empty() && !worker_busy_ && !caller_busy_;
}

void Stream::wait_for_work(std::unique_lock<std::mutex>& lock) {
  auto ready = [this] {
    return (!queue_.empty() && !caller_busy_ && !takeover_.load(std::memory_order_relaxed)) ||
           (stopping_ && queue_.empty());
  };
  if (ready()) return;
  lock.unlock();
  const auto spin_start = std::chrono::steady_clock::now();
  const uint64_t hush = hush_.load(std::memory_order_acquire);
  while (queued_.load(std::memory_order_acquire) == 0 && hush_.load(std::memory_order_acquire) == hush) {
    const auto spun = std::chrono::steady_clock::now() - spin_start;
    if (spun >= kIdleSpin || (spun >= kHeldWorkSpin && has_deferred())) break;
    std::this_thread::yield();
  }
  lock.lock();
  worker_sleeping_ = true;
  if (!ready() && has_deferred()) {
    // Work is held for this stream while the device has none: give the host
    // a moment to submit it, then submit it from here.
    work_available_.wait_for(lock, kDeferredPatience, ready);
    DeferredFlush flush = deferred_flush_.load(std::memory_order_acquire);
    if (!ready() && has_deferred() && flush != nullptr) {
      worker_sleeping_ = false;
      lock.unlock();
      flush(*this, /*from_worker=*/true);
      lock.lock();
      worker_sleeping_ = true;
    }
  }
  work_available_.wait(lock, ready);
  worker_sleeping_ = false;
}

void Stream::worker_loop() {
  set_current_thread_name("kiln-stream-" + std::to_string(device_));
  on_stream_worker = true;
  std::vector<Item> batch;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wait_for_work(lock);
    if (queue_.empty()) return;  // stopping
    // Take everything queued in one go: the launching thread and the worker
    // then meet on the lock once per batch, not once per op.
    batch.swap(queue_);
    queued_.store(0, std::memory_order_release);
    if (room_waiters_ > 0) room_available_.notify_all();
    worker_busy_ = true;
    lock.unlock();
    Status failure;
    const char* failed_name = nullptr;
    // A thread waiting for the stream takes over what has not started.
    const size_t next = run_batch(batch, &takeover_, failure, failed_name);
    lock.lock();
    if (next < batch.size()) {  // handed back: ahead of anything queued since
      queue_.insert(queue_.begin(), std::make_move_iterator(batch.begin() + next),
                    std::make_move_iterator(batch.end()));
      queued_.store(queue_.size(), std::memory_order_release);
    }
    batch.clear();  // keeps its capacity for the next swap
    worker_busy_ = false;
    if (!failure.ok()) record_failure(failed_name, failure);
    if (queue_.empty() || takeover_.load(std::memory_order_relaxed)) work_done_.notify_all();
  }
}

}  // namespace kiln
