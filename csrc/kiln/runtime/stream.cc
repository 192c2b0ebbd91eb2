#include "kiln/runtime/stream.h"

#include <exception>

namespace kiln {

Stream::Stream(int device, int64_t id, bool blocking)
    : device_(device), id_(id), blocking_(blocking) {}

Stream::~Stream() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_available_.notify_all();
  if (worker_.joinable()) worker_.join();
}

namespace {

// Work must not throw, but a third-party library call inside it might. Turn an
// escaped exception into a Status rather than terminating the process.
Status run_work(const Stream::Work& work) {
  try {
    return work();
  } catch (const std::exception& error) {
    return internal_error(error.what());
  } catch (...) {
    return internal_error("unknown exception");
  }
}

}  // namespace

void Stream::record_failure(const std::string& name, const Status& status) {
  if (!first_failure_.ok()) return;  // keep the first, it is the cause
  first_failure_ = status.with_context(name + " failed on kiln:" + std::to_string(device_) +
                                       " stream " + std::to_string(id_));
}

Status Stream::take_failure() {
  Status failure = first_failure_;
  first_failure_ = Status();
  return failure;
}

Status Stream::enqueue(std::string name, Work work) {
  if (blocking_) return run_synchronously(name, work);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(Item{std::move(name), std::move(work)});
    if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  }
  work_available_.notify_one();
  return Status();
}

Status Stream::run_synchronously(const std::string& name, const Work& work) {
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [this] { return queue_.empty() && !worker_busy_ && !caller_busy_; });
  Status earlier = take_failure();
  if (!earlier.ok()) return earlier;
  caller_busy_ = true;
  lock.unlock();
  Status status = run_work(work);
  lock.lock();
  caller_busy_ = false;
  lock.unlock();
  work_available_.notify_one();
  work_done_.notify_all();
  if (!status.ok()) {
    return status.with_context(name + " failed on kiln:" + std::to_string(device_) +
                               " stream " + std::to_string(id_));
  }
  return status;
}

Status Stream::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [this] { return queue_.empty() && !worker_busy_ && !caller_busy_; });
  return take_failure();
}

bool Stream::query() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.empty() && !worker_busy_ && !caller_busy_;
}

void Stream::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_available_.wait(lock, [this] {
      return (!queue_.empty() && !caller_busy_) || (stopping_ && queue_.empty());
    });
    if (queue_.empty()) return;  // stopping
    Item item = std::move(queue_.front());
    queue_.pop_front();
    worker_busy_ = true;
    lock.unlock();
    Status status = run_work(item.work);
    // Release what the work captured (tensors whose deleters may free memory
    // and enqueue onto streams) before taking the lock again.
    item.work = nullptr;
    lock.lock();
    worker_busy_ = false;
    if (!status.ok()) record_failure(item.name, status);
    if (queue_.empty()) work_done_.notify_all();
  }
}

}  // namespace kiln
