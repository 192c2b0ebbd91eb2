#include "kiln/runtime/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <memory>
#include <set>
#include <thread>

#include "kiln/runtime/host_driver.h"
#include "test_util.h"

namespace kiln {
namespace {

using testing_util::Gate;

constexpr uint64_t kCapacity = uint64_t{64} << 20;

class RuntimeTest : public ::testing::Test {
 protected:
  // The current device and streams are per thread (and shared by every Runtime
  // in the process), so put the test thread back to the defaults.
  void TearDown() override {
    runtime.set_current_device(0);
    for (int device = 0; device < runtime.device_count(); ++device) {
      runtime.set_current_stream(runtime.default_stream(device));
    }
  }

  Runtime runtime{std::make_unique<HostDriver>(2, kCapacity), /*launch_blocking=*/false};
};

TEST_F(RuntimeTest, DevicesAndDriver) {
  EXPECT_EQ(runtime.device_count(), 2);
  EXPECT_EQ(runtime.driver().device_count(), 2);
  EXPECT_EQ(runtime.driver().properties(1).total_memory, kCapacity);
  EXPECT_TRUE(runtime.driver().host_addressable());
  for (int device = 0; device < 2; ++device) {
    EXPECT_EQ(runtime.allocator(device).device(), device);
    EXPECT_EQ(runtime.allocator(device).capacity_bytes(), kCapacity);
    EXPECT_EQ(runtime.default_stream(device).device(), device);
    EXPECT_EQ(runtime.default_stream(device).id(), 0);
  }
  EXPECT_NE(&runtime.allocator(0), &runtime.allocator(1));
  EXPECT_NE(&runtime.default_stream(0), &runtime.default_stream(1));
}

TEST_F(RuntimeTest, CheckDevice) {
  EXPECT_TRUE(runtime.check_device(0).ok());
  EXPECT_TRUE(runtime.check_device(1).ok());
  for (int bad : {2, 5, -1}) {
    Status status = runtime.check_device(bad);
    ASSERT_FALSE(status.ok()) << bad;
    EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
    EXPECT_NE(status.message().find("0..1"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find(std::to_string(bad)), std::string::npos) << status.message();
  }
}

TEST(RuntimeWithoutDevices, CheckDeviceSaysThereAreNone) {
  Runtime empty(std::make_unique<HostDriver>(0, kCapacity), false);
  EXPECT_EQ(empty.device_count(), 0);
  Status status = empty.check_device(0);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_NE(status.message().find("no kiln devices"), std::string::npos) << status.message();
  EXPECT_EQ(empty.find_stream(0, 0), nullptr);
}

TEST_F(RuntimeTest, CurrentDeviceIsPerThread) {
  EXPECT_EQ(runtime.current_device(), 0);
  runtime.set_current_device(1);
  EXPECT_EQ(runtime.current_device(), 1);
  int seen_elsewhere = -1;
  std::thread([&] { seen_elsewhere = runtime.current_device(); }).join();
  EXPECT_EQ(seen_elsewhere, 0);
  EXPECT_EQ(runtime.current_device(), 1);
}

TEST_F(RuntimeTest, CurrentStreamIsPerThreadAndPerDevice) {
  EXPECT_EQ(&runtime.current_stream(0), &runtime.default_stream(0));
  EXPECT_EQ(&runtime.current_stream(1), &runtime.default_stream(1));
  Stream& pool0 = runtime.next_pool_stream(0);
  Stream& pool1 = runtime.next_pool_stream(1);
  runtime.set_current_stream(pool0);
  EXPECT_EQ(&runtime.current_stream(0), &pool0);
  EXPECT_EQ(&runtime.current_stream(1), &runtime.default_stream(1));  // unaffected
  runtime.set_current_stream(pool1);
  EXPECT_EQ(&runtime.current_stream(1), &pool1);

  Stream* elsewhere0 = nullptr;
  Stream* elsewhere1 = nullptr;
  std::thread([&] {
    elsewhere0 = &runtime.current_stream(0);
    elsewhere1 = &runtime.current_stream(1);
  }).join();
  EXPECT_EQ(elsewhere0, &runtime.default_stream(0));
  EXPECT_EQ(elsewhere1, &runtime.default_stream(1));
  EXPECT_EQ(&runtime.current_stream(0), &pool0);

  runtime.set_current_stream(runtime.default_stream(0));
  EXPECT_EQ(&runtime.current_stream(0), &runtime.default_stream(0));
}

TEST_F(RuntimeTest, PoolStreamsAreHandedOutRoundRobin) {
  std::set<Stream*> distinct;
  for (int round = 0; round < 3; ++round) {
    for (int64_t id = 1; id <= Runtime::kStreamPoolSize; ++id) {
      Stream& stream = runtime.next_pool_stream(0);
      EXPECT_EQ(stream.id(), id);
      EXPECT_EQ(stream.device(), 0);
      distinct.insert(&stream);
    }
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(Runtime::kStreamPoolSize));
  EXPECT_EQ(distinct.count(&runtime.default_stream(0)), 0u);
  // Each device has its own rotation.
  EXPECT_EQ(runtime.next_pool_stream(1).id(), 1);
  EXPECT_EQ(runtime.next_pool_stream(1).id(), 2);
  EXPECT_EQ(runtime.next_pool_stream(1).device(), 1);
  EXPECT_EQ(runtime.next_pool_stream(0).id(), 1);
}

TEST_F(RuntimeTest, PoolStreamsFromManyThreadsStayInRange) {
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        Stream& stream = runtime.next_pool_stream(0);
        if (stream.id() < 1 || stream.id() > Runtime::kStreamPoolSize) bad.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(bad.load(), 0);
  // 4000 calls is a multiple of 8: the rotation is back at the start.
  EXPECT_EQ(runtime.next_pool_stream(0).id(), 1);
}

TEST_F(RuntimeTest, FindStream) {
  EXPECT_EQ(runtime.find_stream(0, 0), &runtime.default_stream(0));
  EXPECT_EQ(runtime.find_stream(1, 0), &runtime.default_stream(1));
  Stream* last = runtime.find_stream(1, Runtime::kStreamPoolSize);
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->id(), Runtime::kStreamPoolSize);
  EXPECT_EQ(last->device(), 1);
  Stream& pooled = runtime.next_pool_stream(0);
  EXPECT_EQ(runtime.find_stream(0, pooled.id()), &pooled);
  EXPECT_EQ(runtime.find_stream(0, Runtime::kStreamPoolSize + 1), nullptr);
  EXPECT_EQ(runtime.find_stream(0, -1), nullptr);
  EXPECT_EQ(runtime.find_stream(2, 0), nullptr);
  EXPECT_EQ(runtime.find_stream(-1, 0), nullptr);
}

TEST_F(RuntimeTest, SynchronizeDeviceWaitsForEveryStream) {
  std::atomic<int> done{0};
  Gate gate;
  Stream& pooled = runtime.next_pool_stream(0);
  ASSERT_TRUE(gate.hold(pooled).ok());
  for (Stream* stream : {&runtime.default_stream(0), &pooled}) {
    ASSERT_TRUE(stream->enqueue("test::count", [&] {
      done.fetch_add(1);
      return Status();
    }).ok());
  }
  gate.open();
  EXPECT_TRUE(runtime.synchronize_device(0).ok());
  EXPECT_EQ(done.load(), 2);
}

TEST_F(RuntimeTest, SynchronizeDeviceReturnsAQueuedFailure) {
  Stream& pooled = *runtime.find_stream(1, 3);
  std::atomic<bool> later{false};
  ASSERT_TRUE(pooled.enqueue("aten::bad_op", [] { return invalid_argument("bad shape"); }).ok());
  ASSERT_TRUE(runtime.default_stream(1).enqueue("test::later", [&] {
    later = true;
    return Status();
  }).ok());
  // Device 0 is unaffected.
  EXPECT_TRUE(runtime.synchronize_device(0).ok());
  Status status = runtime.synchronize_device(1);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("aten::bad_op"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("kiln:1"), std::string::npos) << status.message();
  EXPECT_TRUE(later.load());
  // Reported once.
  EXPECT_TRUE(runtime.synchronize_device(1).ok());
}

TEST_F(RuntimeTest, AllocatorsDrawOnTheirOwnDevice) {
  StatusOr<void*> on0 = runtime.allocator(0).allocate(1 << 20, runtime.default_stream(0));
  ASSERT_TRUE(on0.ok());
  EXPECT_EQ(runtime.driver().reserved_bytes(0), uint64_t{2} << 20);
  EXPECT_EQ(runtime.driver().reserved_bytes(1), 0u);
  EXPECT_TRUE(runtime.allocator(0).contains(on0.value()));
  EXPECT_FALSE(runtime.allocator(1).contains(on0.value()));
  runtime.allocator(0).free(on0.value());
  StatusOr<void*> pinned = runtime.pinned_host_allocator().allocate(100);
  ASSERT_TRUE(pinned.ok());
  EXPECT_TRUE(runtime.pinned_host_allocator().is_pinned(pinned.value()));
  runtime.pinned_host_allocator().free(pinned.value());
}

TEST(RuntimeLaunchBlocking, StreamsRunWorkInline) {
  Runtime runtime(std::make_unique<HostDriver>(1, kCapacity), /*launch_blocking=*/true);
  bool ran = false;
  EXPECT_TRUE(runtime.default_stream(0).enqueue("test::inline", [&] {
    ran = true;
    return Status();
  }).ok());
  EXPECT_TRUE(ran);
  Status status = runtime.next_pool_stream(0).enqueue("aten::bad_op", [] {
    return invalid_argument("bad");
  });
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("aten::bad_op"), std::string::npos);
  EXPECT_TRUE(runtime.synchronize_device(0).ok());
}

TEST(RuntimeGlobal, GetCreatesTheProcessRuntimeOnce) {
  StatusOr<Runtime*> first = Runtime::get();
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(Runtime::initialized());
  EXPECT_FALSE(Runtime::in_bad_fork());
  StatusOr<Runtime*> second = Runtime::get();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first.value(), second.value());
  EXPECT_GE(first.value()->device_count(), 0);
}

TEST(RuntimeGlobal, ForkedChildOfAnInitializedParentIsRefused) {
  ASSERT_TRUE(Runtime::get().ok());
  GTEST_FLAG_SET(death_test_style, "fast");  // a plain fork(), as multiprocessing does
  EXPECT_EXIT(
      {
        StatusOr<Runtime*> child = Runtime::get();
        bool good = !child.ok() && Runtime::in_bad_fork() &&
                    child.status().code() == StatusCode::kFailedPrecondition &&
                    child.status().message().find("spawn") != std::string::npos;
        std::_Exit(good ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_FALSE(Runtime::in_bad_fork());  // the parent is unaffected
}

}  // namespace
}  // namespace kiln
