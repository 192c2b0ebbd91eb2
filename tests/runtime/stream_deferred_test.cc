// Deferred work (stream.h): work the host holds for a stream reaches it before
// anything submitted after it, whichever call submits next.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "kiln/runtime/stream.h"

namespace kiln {
namespace {

// What a deferring layer holds: items to enqueue in order, for one stream.
struct HeldWork {
  std::mutex mutex;
  std::vector<int> items;
  std::vector<int>* order = nullptr;  // where the items record that they ran
  int flushes = 0;
  int worker_flushes = 0;
};
HeldWork* held = nullptr;

void flush_held(Stream& stream, bool from_worker) {
  if (from_worker) ++held->worker_flushes;
  std::lock_guard<std::mutex> lock(held->mutex);
  ++held->flushes;
  for (int item : held->items) {
    std::vector<int>* order = held->order;
    // The flush's own submissions must not flush again.
    EXPECT_TRUE(stream.enqueue("test::held", [order, item] {
      order->push_back(item);
      return Status();
    }).ok());
  }
  held->items.clear();
  stream.clear_deferred();
}

class StreamDeferred : public ::testing::Test {
 protected:
  void SetUp() override {
    held = &work_;
    work_.order = &order_;
    Stream::set_deferred_flush(&flush_held);
  }
  void TearDown() override {
    Stream::set_deferred_flush(nullptr);
    held = nullptr;
  }
  void hold(Stream& stream, std::initializer_list<int> items) {
    std::lock_guard<std::mutex> lock(work_.mutex);
    work_.items.insert(work_.items.end(), items);
    stream.mark_deferred();
  }
  HeldWork work_;
  std::vector<int> order_;
};

TEST_F(StreamDeferred, AnEnqueueSubmitsHeldWorkFirst) {
  Stream stream(0, 1, false);
  hold(stream, {1, 2});
  std::vector<int>* order = &order_;
  ASSERT_TRUE(stream.enqueue("test::after", [order] {
    order->push_back(3);
    return Status();
  }).ok());
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_EQ(order_, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(work_.flushes, 1);
  EXPECT_FALSE(stream.has_deferred());
}

TEST_F(StreamDeferred, SynchronizeAndQuerySubmitHeldWork) {
  Stream stream(0, 1, false);
  hold(stream, {7});
  stream.query();  // submits the held item (which may still be running)
  EXPECT_EQ(work_.flushes, 1);
  EXPECT_FALSE(stream.has_deferred());
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_EQ(order_, (std::vector<int>{7}));
  hold(stream, {8});
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_EQ(order_, (std::vector<int>{7, 8}));
  EXPECT_EQ(work_.flushes, 2);  // query, then the second synchronize
}

TEST_F(StreamDeferred, AnInlineLaunchRunsAfterHeldWork) {
  Stream stream(0, 1, false);
  hold(stream, {1});
  std::vector<int>* order = &order_;
  ASSERT_TRUE(stream.launch("test::small", 16, [order] {
    order->push_back(2);
    return Status();
  }).ok());
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_EQ(order_, (std::vector<int>{1, 2}));
}

TEST_F(StreamDeferred, NothingHeldMeansNoFlush) {
  Stream stream(0, 1, false);
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_TRUE(stream.query());
  EXPECT_EQ(work_.flushes, 0);
}

TEST_F(StreamDeferred, OnlyTheMarkedStreamFlushes) {
  Stream marked(0, 1, false), other(0, 2, false);
  hold(marked, {5});
  ASSERT_TRUE(other.synchronize().ok());
  EXPECT_EQ(work_.flushes, 0);
  EXPECT_TRUE(marked.has_deferred());
  ASSERT_TRUE(marked.synchronize().ok());
  EXPECT_EQ(order_, (std::vector<int>{5}));
}

TEST_F(StreamDeferred, AnIdleWorkerSubmitsWorkHeldTooLong) {
  Stream stream(0, 1, false);
  std::vector<int>* order = &order_;
  ASSERT_TRUE(stream.enqueue("test::first", [order] {
    order->push_back(0);
    return Status();
  }).ok());
  hold(stream, {1});
  // Nothing touches the stream: its worker runs dry and submits the held item.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (stream.has_deferred() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(stream.has_deferred());
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_EQ(order_, (std::vector<int>{0, 1}));
  EXPECT_EQ(work_.worker_flushes, 1);
}

}  // namespace
}  // namespace kiln
