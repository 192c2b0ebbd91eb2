// ThreadPool: the worker threads a large kernel launch is split over.
//
// One process-wide pool of (hardware threads - 1) workers; the calling thread
// (a stream worker) runs a share too, so a launch uses every hardware thread,
// as PyTorch's CPU kernels do. Only one launch is split at a time: a launch
// arriving while the pool is busy (another stream) runs in its caller alone,
// which is correct, only slower.
//
// Thread-safety: parallel_for may be called from any thread. `function` must
// not call parallel_for itself, and must not throw.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

class ThreadPool {
 public:
  using RangeFunction = void (*)(void* context, int64_t begin, int64_t end);

  // The process-wide pool; never destroyed (workers may be mid-launch at exit).
  static ThreadPool& instance();

  explicit ThreadPool(int workers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads a launch can use, the caller included.
  int thread_count() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls function(context, begin, end) over pieces covering [0, total), each
  // at least `grain` long (except the last), and returns when all have run.
  // At most `max_threads` threads take part (the caller included; 0 or more
  // than thread_count(): all of them), as PyTorch's kernels use at most
  // torch.get_num_threads().
  void parallel_for(int64_t total, int64_t grain, RangeFunction function, void* context,
                    int max_threads = 0);

  // Sends workers that are polling for the next launch to sleep now. Called
  // before work that brings its own threads (PyTorch's CPU kernels on the
  // library path, with OpenMP), so polling workers do not take their cores.
  void stop_polling() { hush_.fetch_add(1, std::memory_order_release); }

 private:
  // One parallel_for call. Each has its own counters: a worker still leaving
  // a job (preempted after its last piece) finds that job's pieces all taken,
  // and cannot take or count a piece of the next one. Shared counters let it
  // do both, which ran pieces twice, returned before all had run, and could
  // leave the caller waiting for ever.
  struct Job {
    RangeFunction function = nullptr;
    void* context = nullptr;
    int64_t total = 0;
    int64_t piece = 0;  // positions per piece
    int64_t pieces = 0;
    int helpers = 0;  // workers that may take pieces, besides the caller
    std::atomic<int> joined{0};  // workers that took part so far
    std::atomic<int64_t> next_piece{0};
    std::atomic<int64_t> pieces_left{0};
  };

  void work_loop();
  // Runs pieces of `job` until none are left to take.
  void run_pieces(Job& job);

  std::vector<std::thread> workers_;
  std::mutex busy_;  // held by the caller whose job the pool runs

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;  // bumped for each job
  std::atomic<uint64_t> published_{0};  // generation_, for workers to poll without the lock
  std::atomic<uint64_t> hush_{0};       // bumped by stop_polling()
  bool stopping_ = false;

  std::shared_ptr<Job> job_;  // the latest job, under mutex_
};

}  // namespace kiln
