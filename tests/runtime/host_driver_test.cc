#include "kiln/runtime/host_driver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace kiln {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(HostDriver, Properties) {
  HostDriver driver(3, 64 * kMiB);
  EXPECT_EQ(driver.device_count(), 3);
  DeviceProperties properties = driver.properties(2);
  EXPECT_EQ(properties.total_memory, 64 * kMiB);
  EXPECT_GT(properties.compute_units, 0);
  EXPECT_NE(properties.name.find("Kiln host device"), std::string::npos);
  EXPECT_TRUE(driver.host_addressable());
}

TEST(HostDriver, SegmentsAreAlignedWritableAndCounted) {
  HostDriver driver(2, 64 * kMiB);
  StatusOr<void*> segment = driver.allocate_segment(1, 3 * kMiB);
  ASSERT_TRUE(segment.ok()) << segment.status().message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(segment.value()) % 64, 0u);
  std::memset(segment.value(), 0xab, 3 * kMiB);
  EXPECT_EQ(driver.reserved_bytes(1), 3 * kMiB);
  EXPECT_EQ(driver.reserved_bytes(0), 0u);  // per device
  driver.free_segment(1, segment.value(), 3 * kMiB);
  EXPECT_EQ(driver.reserved_bytes(1), 0u);
}

TEST(HostDriver, EnforcesTheCapacityPerDevice) {
  HostDriver driver(2, 8 * kMiB);
  StatusOr<void*> whole = driver.allocate_segment(0, 8 * kMiB);  // exactly the capacity
  ASSERT_TRUE(whole.ok());
  StatusOr<void*> more = driver.allocate_segment(0, 4096);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), StatusCode::kOutOfMemory);
  EXPECT_NE(more.status().message().find("device 0"), std::string::npos);
  EXPECT_EQ(driver.reserved_bytes(0), 8 * kMiB);  // a refusal reserves nothing
  // The other device has its own capacity.
  StatusOr<void*> other = driver.allocate_segment(1, 8 * kMiB);
  ASSERT_TRUE(other.ok());
  StatusOr<void*> too_big = driver.allocate_segment(1, 9 * kMiB);
  EXPECT_FALSE(too_big.ok());
  driver.free_segment(0, whole.value(), 8 * kMiB);
  driver.free_segment(1, other.value(), 8 * kMiB);
  StatusOr<void*> again = driver.allocate_segment(0, 4096);
  ASSERT_TRUE(again.ok());
  driver.free_segment(0, again.value(), 4096);
}

TEST(HostDriver, HugeRequestsDoNotWrapTheCapacityCheck) {
  HostDriver driver(1, 8 * kMiB);
  StatusOr<void*> held = driver.allocate_segment(0, 2 * kMiB);
  ASSERT_TRUE(held.ok());
  // 2 MiB + (2^64 - 1 MiB) wraps to 1 MiB, which is under the capacity.
  for (size_t bytes : {SIZE_MAX - kMiB + 1, SIZE_MAX, size_t{1} << 63}) {
    StatusOr<void*> huge = driver.allocate_segment(0, bytes);
    ASSERT_FALSE(huge.ok());
    EXPECT_EQ(huge.status().code(), StatusCode::kOutOfMemory);
    EXPECT_NE(huge.status().message().find("free of 8 MiB"), std::string::npos)
        << huge.status().message();
  }
  EXPECT_EQ(driver.reserved_bytes(0), 2 * kMiB);
  driver.free_segment(0, held.value(), 2 * kMiB);
}

TEST(HostDriver, ConcurrentReservationsNeverExceedTheCapacity) {
  HostDriver driver(1, 16 * kMiB);
  constexpr int kThreads = 4;
  std::atomic<int> granted{0};
  std::vector<std::vector<void*>> held(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        StatusOr<void*> segment = driver.allocate_segment(0, kMiB);
        if (segment.ok()) {
          held[t].push_back(segment.value());
          granted.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(granted.load(), 16);
  EXPECT_EQ(driver.reserved_bytes(0), 16 * kMiB);
  for (auto& segments : held) {
    for (void* segment : segments) driver.free_segment(0, segment, kMiB);
  }
  EXPECT_EQ(driver.reserved_bytes(0), 0u);
}

TEST(HostDriver, Copies) {
  HostDriver driver(1, 8 * kMiB);
  StatusOr<void*> segment = driver.allocate_segment(0, kMiB);
  ASSERT_TRUE(segment.ok());
  auto* device = static_cast<unsigned char*>(segment.value());
  std::vector<unsigned char> host(1000), back(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i * 7);
  driver.copy_host_to_device(device, host.data(), host.size());
  driver.copy_device_to_device(device + 4096, device, host.size());
  driver.copy_device_to_host(back.data(), device + 4096, back.size());
  EXPECT_EQ(back, host);
  // Device-to-device copies may overlap.
  driver.copy_device_to_device(device + 1, device, host.size());
  driver.copy_device_to_host(back.data(), device + 1, back.size());
  EXPECT_EQ(back, host);
  driver.free_segment(0, device, kMiB);
}

}  // namespace
}  // namespace kiln
