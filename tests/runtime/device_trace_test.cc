#include "kiln/runtime/device_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "kiln/runtime/stream.h"

namespace kiln {
namespace {

// The recorder is process-wide: each test starts and stops it.
class DeviceTraceTest : public ::testing::Test {
 protected:
  void TearDown() override {
    device_trace::stop();
    (void)device_trace::take();
  }
};

TEST_F(DeviceTraceTest, RecordsNothingWhileOff) {
  Stream stream{0, 3, /*blocking=*/false};
  ASSERT_FALSE(device_trace::recording());
  ASSERT_TRUE(stream.enqueue("test::queued", [] { return Status(); }).ok());
  ASSERT_TRUE(stream.launch("test::inline", 0, [] { return Status(); }).ok());
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_TRUE(device_trace::take().empty());
}

TEST_F(DeviceTraceTest, RecordsQueuedAndInlineWorkWithTheQueuingOp) {
  Stream stream{0, 7, /*blocking=*/false};
  device_trace::start();
  device_trace::push_correlation(11);
  device_trace::push_correlation(12);  // the innermost op queues
  ASSERT_TRUE(stream.enqueue("test::queued", [] { return Status(); }).ok());
  device_trace::pop_correlation();
  ASSERT_TRUE(stream.synchronize().ok());
  ASSERT_TRUE(stream.launch("test::inline", 0, [] { return Status(); }).ok());  // idle: runs here
  device_trace::pop_correlation();
  ASSERT_TRUE(stream.run_synchronously("test::synchronous", [] { return Status(); }).ok());
  device_trace::stop();
  ASSERT_TRUE(stream.enqueue("test::after", [] { return Status(); }).ok());
  ASSERT_TRUE(stream.synchronize().ok());

  std::vector<device_trace::Activity> activities = device_trace::take();
  ASSERT_EQ(activities.size(), 3u);
  auto find = [&](const std::string& name) {
    return *std::find_if(activities.begin(), activities.end(),
                         [&](const device_trace::Activity& a) { return name == a.name; });
  };
  device_trace::Activity queued = find("test::queued");
  EXPECT_EQ(queued.correlation, 12u);
  EXPECT_TRUE(queued.queued);
  EXPECT_EQ(queued.stream, 7);
  EXPECT_EQ(queued.device, 0);
  EXPECT_LE(queued.start_ns, queued.end_ns);
  device_trace::Activity inline_work = find("test::inline");
  EXPECT_EQ(inline_work.correlation, 11u);
  EXPECT_FALSE(inline_work.queued);
  EXPECT_EQ(find("test::synchronous").correlation, 0u);  // no op was profiled
  EXPECT_TRUE(device_trace::take().empty());
}

TEST_F(DeviceTraceTest, EventMarkersAreNotDeviceWork) {
  Stream stream{0, 4, /*blocking=*/false};
  device_trace::start();
  ASSERT_TRUE(stream.enqueue_without_waiting("test::marker", [] { return Status(); }).ok());
  ASSERT_TRUE(stream.synchronize().ok());
  {
    Stream::InlineRegion region(stream);  // a marker run at once in a held region
    ASSERT_TRUE(region.held());
    ASSERT_TRUE(stream.enqueue_without_waiting("test::held_marker", [] { return Status(); }).ok());
    ASSERT_TRUE(stream.enqueue("test::held_work", [] { return Status(); }).ok());
  }
  device_trace::stop();
  std::vector<device_trace::Activity> activities = device_trace::take();
  ASSERT_EQ(activities.size(), 1u);
  EXPECT_STREQ(activities[0].name, "test::held_work");
}

TEST_F(DeviceTraceTest, DeepNestingKeepsTheDeepestKeptOp) {
  for (uint64_t id = 1; id <= 100; ++id) device_trace::push_correlation(id);
  EXPECT_EQ(device_trace::current_correlation(), 64u);
  for (int i = 0; i < 100; ++i) device_trace::pop_correlation();
  EXPECT_EQ(device_trace::current_correlation(), 0u);
  device_trace::pop_correlation();  // unbalanced pops do not underflow
  EXPECT_EQ(device_trace::current_correlation(), 0u);
}

}  // namespace
}  // namespace kiln
