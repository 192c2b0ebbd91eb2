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
// Thread-safety: all methods may be called from any thread. Work items must
// not enqueue onto or synchronize their own stream.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "kiln/base/status.h"

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

  // Queues `work`; `name` (an op name such as "aten::add.Tensor") labels it in
  // error messages. Returns ok unless the stream is blocking and the work failed.
  Status enqueue(std::string name, Work work);

  // Runs `work` after all queued work and returns its Status. When the stream
  // is idle the work runs in the calling thread, which avoids a thread hand-off
  // for synchronous copies. An earlier queued failure is returned first.
  Status run_synchronously(const std::string& name, const Work& work);

  // Waits until every queued item has run. Returns (and clears) the first
  // failure since the last synchronize.
  Status synchronize();

  // True when no queued work remains.
  bool query() const;

 private:
  struct Item {
    std::string name;
    Work work;
  };

  void worker_loop();
  void record_failure(const std::string& name, const Status& status);  // needs mutex_
  Status take_failure();                                                // needs mutex_

  const int device_;
  const int64_t id_;
  const bool blocking_;

  mutable std::mutex mutex_;
  std::condition_variable work_available_;
  std::condition_variable work_done_;
  std::deque<Item> queue_;
  bool worker_busy_ = false;   // the worker is running an item outside the lock
  bool caller_busy_ = false;   // run_synchronously is running work in its caller
  bool stopping_ = false;
  Status first_failure_;
  std::thread worker_;         // started on the first enqueue
};

}  // namespace kiln
