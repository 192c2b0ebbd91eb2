#include "kiln/runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {
namespace {

struct Coverage {
  std::vector<std::atomic<int>> hits;
  explicit Coverage(int64_t size) : hits(size) {}
};

void mark(void* context, int64_t begin, int64_t end) {
  auto* coverage = static_cast<Coverage*>(context);
  for (int64_t index = begin; index < end; ++index) coverage->hits[index].fetch_add(1);
}

TEST(ThreadPoolTest, CoversEveryPositionOnce) {
  ThreadPool pool(3);
  for (int64_t total : {1, 7, 1000, 100003}) {
    Coverage coverage(total);
    pool.parallel_for(total, 10, &mark, &coverage);
    for (int64_t index = 0; index < total; ++index) ASSERT_EQ(coverage.hits[index].load(), 1) << total;
  }
}

TEST(ThreadPoolTest, PiecesRespectTheGrainAndWorkersWakeAfterStopPolling) {
  ThreadPool pool(1);
  struct Pieces {
    std::mutex mutex;
    std::vector<int64_t> lengths;
    std::vector<std::thread::id> threads;
  } pieces;
  auto record = [](void* context, int64_t begin, int64_t end) {
    // Slow pieces: the caller cannot finish them all before the worker joins.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto* state = static_cast<Pieces*>(context);
    std::lock_guard<std::mutex> lock(state->mutex);
    state->lengths.push_back(end - begin);
    state->threads.push_back(std::this_thread::get_id());
  };
  for (int round = 0; round < 3; ++round) {
    pieces.lengths.clear();
    pieces.threads.clear();
    pool.parallel_for(1000, 100, record, &pieces);
    int64_t covered = 0;
    for (int64_t length : pieces.lengths) covered += length;
    EXPECT_EQ(covered, 1000);
    // Several pieces per thread, none shorter than the grain but the last.
    EXPECT_GE(pieces.lengths.size(), 4u);
    int shorter = 0;
    for (int64_t length : pieces.lengths) shorter += length < 100;
    EXPECT_LE(shorter, 1);
    // Both threads took pieces, also after the worker was sent to sleep.
    std::sort(pieces.threads.begin(), pieces.threads.end());
    EXPECT_EQ(std::unique(pieces.threads.begin(), pieces.threads.end()) - pieces.threads.begin(), 2)
        << "round " << round;
    pool.stop_polling();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(ThreadPoolTest, SplitsLargeWorkAcrossThreads) {
  ThreadPool pool(2);
  struct Seen {
    std::mutex mutex;
    std::vector<std::thread::id> threads;
  } seen;
  auto record = [](void* context, int64_t, int64_t) {
    auto* state = static_cast<Seen*>(context);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> lock(state->mutex);
    state->threads.push_back(std::this_thread::get_id());
  };
  pool.parallel_for(3, 1, record, &seen);
  ASSERT_EQ(seen.threads.size(), 3u);
  EXPECT_NE(seen.threads[0], seen.threads[1]);
}

TEST(ThreadPoolTest, ConcurrentCallersBothFinish) {
  ThreadPool pool(1);
  Coverage first(50000), second(50000);
  std::thread other([&] { pool.parallel_for(50000, 100, &mark, &second); });
  pool.parallel_for(50000, 100, &mark, &first);
  other.join();
  for (int64_t index = 0; index < 50000; ++index) {
    ASSERT_EQ(first.hits[index].load(), 1);
    ASSERT_EQ(second.hits[index].load(), 1);
  }
}

// Jobs back to back, with more workers than cores so that a worker is often
// preempted between two pieces. A worker still leaving one job must not take
// a piece, or count one done, of the next: that ran pieces twice, returned
// before all had run, and could leave the caller waiting for ever (a compiled
// CNN's training hung so, under perf). Each job is checked as soon as it
// returns; a watchdog fails the test instead of letting a hang stall CI.
TEST(ThreadPoolTest, BackToBackJobsRunEachPieceOnceBeforeReturning) {
  ThreadPool pool(static_cast<int>(std::max(4u, 2 * std::thread::hardware_concurrency())));
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mutex);
    if (!finished.wait_for(lock, std::chrono::seconds(30), [&] { return done; })) {
      std::fprintf(stderr, "ThreadPool jobs hung\n");
      std::abort();
    }
  });
  const auto stop = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int64_t jobs = 0;
  for (; std::chrono::steady_clock::now() < stop; ++jobs) {
    const int64_t total = 16 + jobs % 97;
    Coverage coverage(total);
    pool.parallel_for(total, 1, &mark, &coverage);
    for (int64_t index = 0; index < total; ++index) {
      ASSERT_EQ(coverage.hits[index].load(), 1) << "job " << jobs << ", position " << index;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  finished.notify_all();
  watchdog.join();
  EXPECT_GT(jobs, 1000);
}

// torch.set_num_threads(n) caps a library call's split: at most n threads,
// the caller included, take pieces, however many workers the pool has.
TEST(ThreadPoolTest, AtMostMaxThreadsTakePart) {
  ThreadPool pool(3);
  struct Seen {
    std::mutex mutex;
    std::vector<std::thread::id> threads;
    int64_t covered = 0;
  } seen;
  auto record = [](void* context, int64_t begin, int64_t end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // every worker has time to join
    auto* state = static_cast<Seen*>(context);
    std::lock_guard<std::mutex> lock(state->mutex);
    state->threads.push_back(std::this_thread::get_id());
    state->covered += end - begin;
  };
  for (int max_threads : {1, 2, 3}) {
    seen.threads.clear();
    seen.covered = 0;
    pool.parallel_for(64, 1, record, &seen, max_threads);
    EXPECT_EQ(seen.covered, 64);
    std::sort(seen.threads.begin(), seen.threads.end());
    const auto distinct = std::unique(seen.threads.begin(), seen.threads.end()) - seen.threads.begin();
    EXPECT_LE(distinct, max_threads);
    if (max_threads == 1) EXPECT_EQ(seen.threads.front(), std::this_thread::get_id());
  }
}

TEST(ThreadPoolTest, SmallWorkRunsInTheCaller) {
  ThreadPool pool(2);
  std::thread::id caller = std::this_thread::get_id(), ran;
  auto record = [](void* context, int64_t, int64_t) {
    *static_cast<std::thread::id*>(context) = std::this_thread::get_id();
  };
  pool.parallel_for(5, 100, record, &ran);
  EXPECT_EQ(ran, caller);
}

}  // namespace
}  // namespace kiln
