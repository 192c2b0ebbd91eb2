#include "kiln/runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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
