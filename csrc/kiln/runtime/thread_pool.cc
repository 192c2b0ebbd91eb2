#include "kiln/runtime/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "kiln/base/thread_name.h"

namespace kiln {
namespace {

constexpr int64_t kPiecesPerThread = 4;
constexpr std::chrono::microseconds kWorkerSpin{200};

}  // namespace

ThreadPool& ThreadPool::instance() {
  static ThreadPool* pool = [] {
    int threads = static_cast<int>(std::thread::hardware_concurrency());
    return new ThreadPool(std::max(threads, 1) - 1);
  }();
  return *pool;
}

ThreadPool::ThreadPool(int workers) {
  for (int index = 0; index < workers; ++index) {
    workers_.emplace_back([this, index] {
      set_current_thread_name("kiln-pool-" + std::to_string(index));
      work_loop();
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::run_pieces(Job& job) {
  while (true) {
    int64_t piece = job.next_piece.fetch_add(1);
    if (piece >= job.pieces) return;
    int64_t begin = piece * job.piece;
    int64_t end = std::min(job.total, begin + job.piece);
    job.function(job.context, begin, end);
    if (job.pieces_left.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_all();
    }
  }
}

void ThreadPool::work_loop() {
  uint64_t seen = 0;
  while (true) {
    // Launches tend to come in bursts (one per op of a model step): look for
    // the next one for a short while before sleeping, as OpenMP's workers do.
    // A sleeping thread can take far longer to wake than a kernel runs (an
    // idle virtual CPU is halted), and the launch then runs on its caller
    // alone. yield() leaves the core to any other runnable thread meanwhile.
    auto give_up = std::chrono::steady_clock::now() + kWorkerSpin;
    const uint64_t hush = hush_.load(std::memory_order_acquire);
    while (published_.load(std::memory_order_acquire) == seen &&
           hush_.load(std::memory_order_acquire) == hush &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
    }
    // A job capped below the pool's size takes only its first `helpers`
    // workers; the others go back to waiting for the next job.
    if (job->joined.fetch_add(1) < job->helpers) run_pieces(*job);
  }
}

void ThreadPool::parallel_for(int64_t total, int64_t grain, RangeFunction function, void* context,
                              int max_threads) {
  if (total <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = max_threads > 0 ? std::min(max_threads, thread_count()) : thread_count();
  int64_t wanted = std::min<int64_t>(threads, (total + grain - 1) / grain);
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (wanted <= 1 || workers_.empty() || !busy.owns_lock()) {
    function(context, 0, total);
    return;
  }
  auto job = std::make_shared<Job>();
  job->function = function;
  job->context = context;
  job->total = total;
  // Several pieces per thread, taken in turn: a thread that starts late
  // (woken slowly, or its core busy with another process) takes fewer
  // pieces instead of holding the whole launch back.
  job->piece = std::max(grain, (total + wanted * kPiecesPerThread - 1) / (wanted * kPiecesPerThread));
  job->pieces = (total + job->piece - 1) / job->piece;
  job->pieces_left.store(job->pieces);
  job->helpers = static_cast<int>(wanted) - 1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    ++generation_;
    published_.store(generation_, std::memory_order_release);
  }
  wake_.notify_all();
  run_pieces(*job);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return job->pieces_left.load() == 0; });
}

}  // namespace kiln
