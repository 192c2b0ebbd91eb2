#include "kiln/runtime/caching_allocator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <future>
#include <random>
#include <thread>
#include <vector>

#include "kiln/runtime/host_driver.h"
#include "test_util.h"

namespace kiln {
namespace {

using testing_util::Gate;
using testing_util::ready_within;

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;
constexpr uint64_t kCapacity = uint64_t{64} << 20;

class CachingAllocatorTest : public ::testing::Test {
 protected:
  void* allocate(size_t bytes, Stream& stream) {
    StatusOr<void*> result = allocator.allocate(bytes, stream);
    EXPECT_TRUE(result.ok()) << result.status().message();
    return result.ok() ? result.value() : nullptr;
  }
  void* allocate(size_t bytes) { return allocate(bytes, s1); }

  HostDriver driver{1, kCapacity};
  Stream s1{0, 1, /*blocking=*/false};
  Stream s2{0, 2, /*blocking=*/false};
  CachingAllocator allocator{driver, 0};  // declared last: destroyed before the streams
};

TEST_F(CachingAllocatorTest, ZeroBytesReturnsNull) {
  StatusOr<void*> result = allocator.allocate(0, s1);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.value(), nullptr);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 0);
  EXPECT_EQ(stats.num_device_alloc, 0);
  allocator.free(nullptr);  // harmless
  EXPECT_EQ(allocator.stats().allocation[kAllPools].current, 0);
}

TEST_F(CachingAllocatorTest, ReturnsWritableAlignedMemory) {
  std::vector<std::pair<char*, size_t>> blocks;
  for (size_t bytes : {size_t{1}, size_t{100}, size_t{513}, 300 * kKiB, kMiB, kMiB + 1,
                       5 * kMiB, 11 * kMiB}) {
    char* pointer = static_cast<char*>(allocate(bytes));
    ASSERT_NE(pointer, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pointer) % 64, 0u) << bytes;
    std::memset(pointer, static_cast<int>(blocks.size() + 1), bytes);
    blocks.emplace_back(pointer, bytes);
  }
  // No block overlaps another: each still holds its own fill byte.
  for (size_t i = 0; i < blocks.size(); ++i) {
    auto [pointer, bytes] = blocks[i];
    EXPECT_EQ(pointer[0], static_cast<char>(i + 1));
    EXPECT_EQ(pointer[bytes - 1], static_cast<char>(i + 1));
  }
  for (auto [pointer, bytes] : blocks) allocator.free(pointer);
}

TEST_F(CachingAllocatorTest, RoundsRequestsUpTo512Bytes) {
  void* a = allocate(1);
  void* b = allocate(513);
  void* c = allocate(1024);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, 512 + 1024 + 1024);
  EXPECT_EQ(stats.requested_bytes[kAllPools].current, 1 + 513 + 1024);
  allocator.free(a);
  allocator.free(b);
  allocator.free(c);
}

TEST_F(CachingAllocatorTest, ReusesAFreedBlockOnTheSameStream) {
  void* first = allocate(1000);
  allocator.free(first);
  void* second = allocate(1000);
  EXPECT_EQ(second, first);
  allocator.free(second);
  // A smaller request of the same rounded size reuses it too.
  void* third = allocate(600);
  EXPECT_EQ(third, first);
  allocator.free(third);
  // Large blocks are cached as well.
  void* large = allocate(12 * kMiB);
  allocator.free(large);
  EXPECT_EQ(allocate(12 * kMiB), large);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.num_device_alloc, 2);  // one small segment, one large
  EXPECT_EQ(stats.num_device_free, 0);
  allocator.free(large);
}

TEST_F(CachingAllocatorTest, DoesNotReuseAcrossStreams) {
  void* on_s1 = allocate(1000, s1);
  allocator.free(on_s1);
  void* on_s2 = allocate(1000, s2);
  EXPECT_NE(on_s2, on_s1);
  EXPECT_EQ(allocator.stats().num_device_alloc, 2);
  // Each stream still reuses its own cache.
  void* again_s1 = allocate(1000, s1);
  EXPECT_EQ(again_s1, on_s1);
  EXPECT_EQ(allocator.stats().num_device_alloc, 2);
  allocator.free(on_s2);
  allocator.free(again_s1);
}

TEST_F(CachingAllocatorTest, SmallAllocationsShareOneSegment) {
  char* a = static_cast<char*>(allocate(1000));
  char* b = static_cast<char*>(allocate(4000));
  char* c = static_cast<char*>(allocate(256 * kKiB));
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.segment[kAllPools].current, 1);
  EXPECT_EQ(stats.segment[kSmallPool].current, 1);
  EXPECT_EQ(stats.segment[kLargePool].current, 0);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current,
            static_cast<int64_t>(CachingAllocator::kSmallSegmentSize));
  EXPECT_EQ(driver.reserved_bytes(0), CachingAllocator::kSmallSegmentSize);
  EXPECT_EQ(stats.num_device_alloc, 1);
  // All three lie within one 2 MiB span.
  char* low = std::min({a, b, c});
  char* high = std::max({a + 1024, b + 4096, c + 256 * kKiB});
  EXPECT_LE(static_cast<size_t>(high - low), CachingAllocator::kSmallSegmentSize);
  allocator.free(a);
  allocator.free(b);
  allocator.free(c);
}

TEST_F(CachingAllocatorTest, SmallAndLargePoolsUseTheirOwnSegmentSizes) {
  void* small = allocate(kMiB);  // the largest small request
  void* large = allocate(kMiB + 1);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.segment[kSmallPool].current, 1);
  EXPECT_EQ(stats.segment[kLargePool].current, 1);
  EXPECT_EQ(stats.reserved_bytes[kSmallPool].current,
            static_cast<int64_t>(CachingAllocator::kSmallSegmentSize));
  EXPECT_EQ(stats.reserved_bytes[kLargePool].current,
            static_cast<int64_t>(CachingAllocator::kLargeSegmentSize));
  EXPECT_EQ(stats.allocated_bytes[kSmallPool].current, static_cast<int64_t>(kMiB));
  EXPECT_EQ(stats.allocated_bytes[kLargePool].current, static_cast<int64_t>(kMiB + 512));
  EXPECT_EQ(stats.allocation[kAllPools].current, 2);
  // A request of 10 MiB or more gets its own segment, rounded up to 2 MiB (on
  // another stream, so that the cached rest of the 20 MiB segment cannot serve it).
  void* huge = allocate(11 * kMiB, s2);
  EXPECT_EQ(allocator.stats().reserved_bytes[kLargePool].current,
            static_cast<int64_t>(CachingAllocator::kLargeSegmentSize + 12 * kMiB));
  allocator.free(small);
  allocator.free(large);
  allocator.free(huge);
}

TEST_F(CachingAllocatorTest, MidSizeRequestsShareA20MiBSegment) {
  // Requests between 1 MiB and 10 MiB are carved out of 20 MiB segments.
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(allocate(5 * kMiB));
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.segment[kLargePool].current, 1);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current,
            static_cast<int64_t>(CachingAllocator::kLargeSegmentSize));
  EXPECT_EQ(stats.num_device_alloc, 1);
  // Ten 2 MiB blocks fit in the capacity only if segments are shared.
  std::vector<void*> more;
  for (int i = 0; i < 10; ++i) more.push_back(allocate(2 * kMiB));
  EXPECT_EQ(allocator.stats().segment[kLargePool].current, 2);
  for (void* block : blocks) allocator.free(block);
  for (void* block : more) allocator.free(block);
}

TEST_F(CachingAllocatorTest, MergedBlocksServeASegmentSizedRequest) {
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(allocate(5 * kMiB));
  void* base = std::min({blocks[0], blocks[1], blocks[2], blocks[3]});
  // Free in an order that merges with the right, the left and both neighbours.
  for (int index : {1, 3, 0, 2}) allocator.free(blocks[index]);
  // Only the whole 20 MiB segment can serve 12 MiB; without merging the
  // allocator would need a second segment.
  void* big = allocate(12 * kMiB);
  EXPECT_EQ(big, base);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.num_device_alloc, 1);
  EXPECT_EQ(stats.segment[kAllPools].current, 1);
  allocator.free(big);
}

TEST_F(CachingAllocatorTest, MergedSmallSegmentIsReleasedByEmptyCache) {
  // Two 1 MiB blocks fill one 2 MiB segment exactly.
  void* a = allocate(kMiB);
  void* b = allocate(kMiB);
  EXPECT_EQ(allocator.stats().segment[kAllPools].current, 1);
  allocator.free(b);
  allocator.free(a);
  // empty_cache releases only whole free segments: this one only if merged.
  allocator.empty_cache();
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.segment[kAllPools].current, 0);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.num_device_free, 1);
  EXPECT_EQ(driver.reserved_bytes(0), 0u);
}

TEST_F(CachingAllocatorTest, Statistics) {
  void* a = allocate(1000);  // 1024 bytes
  void* b = allocate(3000);  // 3072 bytes
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 2);
  EXPECT_EQ(stats.allocation[kSmallPool].current, 2);
  EXPECT_EQ(stats.allocation[kLargePool].current, 0);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, 4096);
  EXPECT_EQ(stats.requested_bytes[kAllPools].current, 4000);
  EXPECT_EQ(stats.active[kAllPools].current, 2);
  EXPECT_EQ(stats.active_bytes[kAllPools].current, 4096);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 2 << 20);
  EXPECT_EQ(stats.segment[kAllPools].current, 1);
  EXPECT_EQ(stats.num_device_alloc, 1);
  EXPECT_EQ(stats.num_device_free, 0);

  allocator.free(a);
  stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 1);
  EXPECT_EQ(stats.allocation[kAllPools].peak, 2);
  EXPECT_EQ(stats.allocation[kAllPools].allocated, 2);
  EXPECT_EQ(stats.allocation[kAllPools].freed, 1);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, 3072);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].peak, 4096);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].freed, 1024);
  EXPECT_EQ(stats.requested_bytes[kAllPools].current, 3000);
  EXPECT_EQ(stats.requested_bytes[kAllPools].peak, 4000);
  EXPECT_EQ(stats.active[kAllPools].current, 1);
  EXPECT_EQ(stats.active[kAllPools].peak, 2);
  EXPECT_EQ(stats.active_bytes[kAllPools].current, 3072);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 2 << 20);  // still cached

  allocator.reset_peak_stats();
  stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].peak, 1);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].peak, 3072);
  EXPECT_EQ(stats.requested_bytes[kAllPools].peak, 3000);
  EXPECT_EQ(stats.active[kSmallPool].peak, 1);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].peak, 2 << 20);
  EXPECT_EQ(stats.allocation[kAllPools].allocated, 2);  // accumulated totals survive

  allocator.reset_accumulated_stats();
  stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].allocated, 0);
  EXPECT_EQ(stats.allocation[kAllPools].freed, 0);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].allocated, 0);
  EXPECT_EQ(stats.num_device_alloc, 0);
  EXPECT_EQ(stats.num_device_free, 0);
  EXPECT_EQ(stats.allocation[kAllPools].current, 1);  // current values survive
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 2 << 20);

  allocator.free(b);
  allocator.empty_cache();
  stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 0);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.requested_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.active[kAllPools].current, 0);
  EXPECT_EQ(stats.active_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].peak, 2 << 20);
  EXPECT_EQ(stats.segment[kAllPools].current, 0);
  EXPECT_EQ(stats.num_device_free, 1);
  EXPECT_EQ(stats.allocation[kAllPools].freed, 1);
}

TEST_F(CachingAllocatorTest, EmptyCacheReturnsUnusedSegments) {
  std::vector<void*> blocks = {allocate(1000), allocate(kMiB), allocate(3 * kMiB),
                               allocate(15 * kMiB), allocate(100, s2)};
  EXPECT_GT(driver.reserved_bytes(0), 0u);
  for (void* block : blocks) allocator.free(block);
  allocator.empty_cache();
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.segment[kAllPools].current, 0);
  EXPECT_EQ(stats.num_device_free, stats.num_device_alloc);
  EXPECT_EQ(driver.reserved_bytes(0), 0u);
  EXPECT_EQ(allocator.free_device_bytes(), kCapacity);
  EXPECT_EQ(allocator.capacity_bytes(), kCapacity);
  for (void* block : blocks) EXPECT_FALSE(allocator.contains(block));
}

TEST_F(CachingAllocatorTest, EmptyCacheKeepsSegmentsWithLiveBlocks) {
  char* live = static_cast<char*>(allocate(1000));
  void* freed = allocate(1000);
  void* other = allocate(12 * kMiB);
  allocator.free(freed);
  allocator.free(other);
  allocator.empty_cache();
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.segment[kAllPools].current, 1);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 2 << 20);
  EXPECT_EQ(driver.reserved_bytes(0), uint64_t{2} << 20);
  std::memset(live, 7, 1000);  // still mapped
  EXPECT_TRUE(allocator.contains(live));
  allocator.free(live);
}

TEST_F(CachingAllocatorTest, OutOfMemoryIsReportedAndCounted) {
  StatusOr<void*> result = allocator.allocate(100 * kMiB, s1);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kOutOfMemory);
  const std::string& message = result.status().message();
  EXPECT_NE(message.find("Tried to allocate"), std::string::npos) << message;
  EXPECT_NE(message.find("100.00 MiB"), std::string::npos) << message;
  EXPECT_NE(message.find("kiln:0"), std::string::npos) << message;
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.num_ooms, 1);
  EXPECT_EQ(stats.allocation[kAllPools].current, 0);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 0);
  EXPECT_EQ(driver.reserved_bytes(0), 0u);

  // The allocator keeps working after an OOM.
  void* small = allocate(1000);
  void* large = allocate(30 * kMiB);
  EXPECT_NE(small, nullptr);
  EXPECT_NE(large, nullptr);
  StatusOr<void*> again = allocator.allocate(40 * kMiB, s1);
  EXPECT_FALSE(again.ok());
  EXPECT_EQ(allocator.stats().num_ooms, 2);
  allocator.free(small);
  allocator.free(large);
}

TEST_F(CachingAllocatorTest, AbsurdlyLargeRequestsAreOutOfMemory) {
  // Sizes whose rounding would overflow size_t must not turn into tiny blocks.
  for (size_t bytes : {SIZE_MAX, SIZE_MAX - 100, SIZE_MAX / 2 + 1, size_t{1} << 62,
                       SIZE_MAX - kCapacity}) {
    StatusOr<void*> result = allocator.allocate(bytes, s1);
    EXPECT_FALSE(result.ok()) << bytes;
    if (!result.ok()) {
      EXPECT_EQ(result.status().code(), StatusCode::kOutOfMemory);
      EXPECT_NE(result.status().message().find("Tried to allocate"), std::string::npos);
    }
  }
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.num_ooms, 5);
  EXPECT_EQ(stats.allocation[kAllPools].current, 0);
  EXPECT_EQ(driver.reserved_bytes(0), 0u);
  void* small = allocate(1000);
  EXPECT_NE(small, nullptr);
  allocator.free(small);
}

TEST_F(CachingAllocatorTest, CapacitySizedRequestFitsAnEmptyDevice) {
  void* all = allocate(kCapacity);
  EXPECT_NE(all, nullptr);
  EXPECT_EQ(allocator.free_device_bytes(), 0u);
  StatusOr<void*> more = allocator.allocate(1, s1);
  EXPECT_FALSE(more.ok());
  allocator.free(all);
}

TEST_F(CachingAllocatorTest, RetriesAfterReleasingTheCache) {
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(allocate(20 * kMiB));
  for (void* block : blocks) allocator.free(block);
  EXPECT_EQ(driver.reserved_bytes(0), uint64_t{60} << 20);
  // 30 MiB fits neither a cached 20 MiB block nor the 4 MiB the driver has left.
  void* big = allocate(30 * kMiB);
  EXPECT_NE(big, nullptr);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.num_alloc_retries, 1);
  EXPECT_EQ(stats.num_ooms, 0);
  EXPECT_EQ(stats.num_device_free, 3);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 30 << 20);
  EXPECT_EQ(driver.reserved_bytes(0), uint64_t{30} << 20);
  allocator.free(big);
}

TEST_F(CachingAllocatorTest, RetryReleasesACachedBlockOfAnotherStream) {
  void* on_s2 = allocate(50 * kMiB, s2);
  allocator.free(on_s2);
  // s1 cannot use s2's cached block; only releasing it leaves room.
  void* on_s1 = allocate(50 * kMiB, s1);
  EXPECT_NE(on_s1, nullptr);
  EXPECT_EQ(allocator.stats().num_alloc_retries, 1);
  allocator.free(on_s1);
}

TEST_F(CachingAllocatorTest, SmallRequestSucceedsWhenOnlyAHugeCachedBlockExists) {
  void* huge = allocate(50 * kMiB);
  allocator.free(huge);
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(allocate(2 * kMiB));
  for (int i = 0; i < 3; ++i) blocks.push_back(allocate(100 * kKiB));
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.num_ooms, 0);
  EXPECT_LE(driver.reserved_bytes(0), kCapacity);
  for (void* block : blocks) allocator.free(block);
}

TEST_F(CachingAllocatorTest, RecordStreamDelaysReuseUntilTheStreamCatchesUp) {
  Gate gate;
  void* first = allocate(1000, s1);
  allocator.record_stream(first, s2);
  ASSERT_TRUE(gate.hold(s2).ok());  // s2 is still "using" the block
  allocator.free(first);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 0);
  EXPECT_EQ(stats.active[kAllPools].current, 1);  // waiting on s2
  EXPECT_EQ(stats.active_bytes[kAllPools].current, 1024);

  void* second = allocate(1000, s1);
  EXPECT_NE(second, first) << "reused a block that s2 may still be using";
  void* still_second = allocate(1000, s1);
  EXPECT_NE(still_second, first);
  allocator.free(second);

  gate.open();
  ASSERT_TRUE(s2.synchronize().ok());
  void* third = allocate(1000, s1);
  EXPECT_EQ(third, first);
  allocator.free(third);
  EXPECT_EQ(allocator.stats().active[kAllPools].current, 1);  // still_second
  allocator.free(still_second);
  EXPECT_EQ(allocator.stats().active[kAllPools].current, 0);
}

TEST_F(CachingAllocatorTest, RecordStreamOnTheOwningStreamDoesNotDelay) {
  Gate gate;
  ASSERT_TRUE(gate.hold(s1).ok());
  void* first = allocate(1000, s1);
  allocator.record_stream(first, s1);
  allocator.free(first);
  EXPECT_EQ(allocate(1000, s1), first);  // ordered on s1 anyway
  gate.open();
  allocator.free(first);
}

TEST_F(CachingAllocatorTest, EmptyCacheKeepsBlocksStillUsedOnOtherStreams) {
  Gate gate;
  void* block = allocate(12 * kMiB, s1);
  allocator.record_stream(block, s2);
  ASSERT_TRUE(gate.hold(s2).ok());
  allocator.free(block);
  allocator.empty_cache();
  EXPECT_EQ(driver.reserved_bytes(0), uint64_t{12} << 20);
  EXPECT_TRUE(allocator.contains(block));
  gate.open();
  ASSERT_TRUE(s2.synchronize().ok());
  allocator.empty_cache();
  EXPECT_EQ(driver.reserved_bytes(0), 0u);
  EXPECT_EQ(allocator.stats().active[kAllPools].current, 0);
}

TEST_F(CachingAllocatorTest, OutOfMemoryRetryWaitsForBlocksUsedOnOtherStreams) {
  Gate gate;
  void* block = allocate(40 * kMiB, s1);
  allocator.record_stream(block, s2);
  ASSERT_TRUE(gate.hold(s2).ok());
  allocator.free(block);
  // 40 MiB more only fits once the pending block is back and released, which
  // needs s2's work to finish.
  std::future<StatusOr<void*>> result =
      std::async(std::launch::async, [&] { return allocator.allocate(40 * kMiB, s1); });
  EXPECT_FALSE(ready_within(result, std::chrono::milliseconds(30)));
  gate.open();
  StatusOr<void*> allocated = result.get();
  ASSERT_TRUE(allocated.ok()) << allocated.status().message();
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.num_alloc_retries, 1);
  EXPECT_EQ(stats.num_ooms, 0);
  EXPECT_EQ(driver.reserved_bytes(0), uint64_t{40} << 20);
  allocator.free(allocated.value());
}

// Freed while queued work still uses the block (the torch layer's queued
// launches drop their holds on kiln tensors): the host's next allocation on
// the stream reuses it at once, since its work queues behind.
TEST_F(CachingAllocatorTest, BlockFreedBeforeItsQueuedWorkRanIsReusedByTheHost) {
  Gate gate;
  void* block = allocate(1000, s1);
  ASSERT_TRUE(gate.hold(s1).ok());  // stands for work still writing the block
  allocator.free(block);
  void* next = allocate(1000, s1);
  EXPECT_EQ(next, block);
  gate.open();
  allocator.free(next);
}

// ... but empty_cache() must not unmap it under that work: it waits for it.
TEST_F(CachingAllocatorTest, EmptyCacheWaitsForQueuedWorkOnAFreedSegment) {
  Gate gate;
  char* block = static_cast<char*>(allocate(12 * kMiB, s1));
  std::atomic<bool> written{false};
  ASSERT_TRUE(gate.hold(s1).ok());
  ASSERT_TRUE(s1.enqueue("test::write", [block, &written] {
    std::memset(block, 7, 12 * kMiB);  // would fault if the segment were unmapped
    written = true;
    return Status();
  }).ok());
  allocator.free(block);
  std::future<void> emptied = std::async(std::launch::async, [&] { allocator.empty_cache(); });
  EXPECT_FALSE(ready_within(emptied, std::chrono::milliseconds(30)));
  EXPECT_TRUE(allocator.contains(block));
  gate.open();
  emptied.get();
  EXPECT_TRUE(written);
  EXPECT_EQ(driver.reserved_bytes(0), 0u);
}

TEST_F(CachingAllocatorTest, OutOfMemoryRetryWaitsForQueuedWorkOnAFreedSegment) {
  Gate gate;
  void* block = allocate(40 * kMiB, s1);
  ASSERT_TRUE(gate.hold(s1).ok());
  allocator.free(block);
  // s2 needs the driver's memory back, which s1's queued work still uses.
  std::future<StatusOr<void*>> result =
      std::async(std::launch::async, [&] { return allocator.allocate(40 * kMiB, s2); });
  EXPECT_FALSE(ready_within(result, std::chrono::milliseconds(30)));
  gate.open();
  StatusOr<void*> allocated = result.get();
  ASSERT_TRUE(allocated.ok()) << allocated.status().message();
  EXPECT_EQ(allocator.stats().num_alloc_retries, 1);
  allocator.free(allocated.value());
}

// Work running on the stream's thread sits at its own place in the queue, so
// it must not get a block that work queued after it may still use.
TEST_F(CachingAllocatorTest, QueuedWorkDoesNotReuseABlockLaterWorkStillUses) {
  Gate gate;
  void* block = allocate(1000, s1);
  std::promise<void*> scratch;
  ASSERT_TRUE(gate.hold(s1).ok());
  ASSERT_TRUE(s1.enqueue("test::scratch", [&] {
    StatusOr<void*> taken = allocator.allocate(1000, s1);
    scratch.set_value(taken.ok() ? taken.value() : nullptr);
    return Status();
  }).ok());
  ASSERT_TRUE(gate.hold(s1).ok());  // stands for later work reading the block
  allocator.free(block);
  gate.open();
  void* taken = scratch.get_future().get();
  EXPECT_NE(taken, nullptr);
  EXPECT_NE(taken, block) << "queued work took memory that later queued work uses";
  ASSERT_TRUE(s1.synchronize().ok());
  allocator.free(taken);
  // Once the stream caught up, work on it may take the block again.
  std::promise<void*> again;
  ASSERT_TRUE(s1.enqueue("test::scratch", [&] {
    StatusOr<void*> reused = allocator.allocate(1000, s1);
    again.set_value(reused.ok() ? reused.value() : nullptr);
    return Status();
  }).ok());
  void* reused = again.get_future().get();
  EXPECT_TRUE(reused == block || reused == taken);
  ASSERT_TRUE(s1.synchronize().ok());
  allocator.free(reused);
}

TEST_F(CachingAllocatorTest, Contains) {
  char* small = static_cast<char*>(allocate(1000));
  char* large = static_cast<char*>(allocate(12 * kMiB));
  EXPECT_TRUE(allocator.contains(small));
  EXPECT_TRUE(allocator.contains(small + 999));
  // The rest of the small segment is cached but belongs to the allocator.
  EXPECT_TRUE(allocator.contains(small + 4096));
  EXPECT_TRUE(allocator.contains(large + 12 * kMiB - 1));
  int on_stack = 0;
  std::vector<char> on_heap(64);
  EXPECT_FALSE(allocator.contains(&on_stack));
  EXPECT_FALSE(allocator.contains(on_heap.data()));
  EXPECT_FALSE(allocator.contains(nullptr));
  allocator.free(small);
  EXPECT_TRUE(allocator.contains(small));  // cached, still reserved
  allocator.free(large);
  allocator.empty_cache();
  EXPECT_FALSE(allocator.contains(small));
  EXPECT_FALSE(allocator.contains(large));
}

TEST_F(CachingAllocatorTest, UnknownAndDoubleFreesAreIgnored) {
  void* block = allocate(1000);
  char* interior = static_cast<char*>(block) + 512;
  int on_stack = 0;
  allocator.free(&on_stack);
  allocator.free(interior);
  EXPECT_EQ(allocator.stats().allocation[kAllPools].current, 1);
  allocator.free(block);
  allocator.free(block);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 0);
  EXPECT_EQ(stats.active[kAllPools].current, 0);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, 0);
}

TEST_F(CachingAllocatorTest, ConcurrentAllocateAndFree) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 3000;
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < kThreads; ++i) streams.push_back(std::make_unique<Stream>(0, 10 + i, false));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(t);
      std::vector<std::pair<unsigned char*, size_t>> live;
      auto release = [&](size_t index) {
        auto [pointer, bytes] = live[index];
        if (pointer[0] != t || pointer[bytes - 1] != t) failures.fetch_add(1);
        allocator.free(pointer);
        live[index] = live.back();
        live.pop_back();
      };
      for (int i = 0; i < kIterations; ++i) {
        if (live.size() < 16 && (live.empty() || random() % 2 == 0)) {
          size_t bytes = 1 + random() % (64 * 1024);
          StatusOr<void*> result = allocator.allocate(bytes, *streams[t]);
          if (!result.ok()) {
            failures.fetch_add(1);
            continue;
          }
          auto* pointer = static_cast<unsigned char*>(result.value());
          pointer[0] = static_cast<unsigned char>(t);
          pointer[bytes - 1] = static_cast<unsigned char>(t);
          live.emplace_back(pointer, bytes);
        } else {
          release(random() % live.size());
        }
      }
      while (!live.empty()) release(live.size() - 1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 0);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.requested_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.active[kAllPools].current, 0);
  allocator.empty_cache();
  EXPECT_EQ(driver.reserved_bytes(0), 0u);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

std::vector<MemoryAction::Kind> kinds_of(const std::vector<MemoryAction>& actions) {
  std::vector<MemoryAction::Kind> kinds;
  for (const MemoryAction& action : actions) kinds.push_back(action.kind);
  return kinds;
}

TEST_F(CachingAllocatorTest, HistoryRecordsActionsOnlyWhileEnabled) {
  void* before = allocate(kKiB);
  allocator.free(before);
  EXPECT_TRUE(allocator.history().empty());
  allocator.enable_history(MemoryHistoryOptions{});
  void* pointer = allocate(3 * kMiB);  // a new large segment
  allocator.free(pointer);
  allocator.empty_cache();
  allocator.disable_history();
  allocator.free(allocate(kKiB));
  std::vector<MemoryAction> actions = allocator.history();
  using K = MemoryAction;
  // empty_cache() also returns the small segment allocated before.
  EXPECT_EQ(kinds_of(actions), (std::vector<MemoryAction::Kind>{K::kSegmentAlloc, K::kAlloc, K::kFreeRequested,
                                                                 K::kFreeCompleted, K::kSegmentFree,
                                                                 K::kSegmentFree}));
  EXPECT_EQ(actions[1].address, reinterpret_cast<uint64_t>(pointer));
  EXPECT_EQ(actions[1].size, 3 * kMiB);
  EXPECT_EQ(actions[0].size, CachingAllocator::kLargeSegmentSize);
  EXPECT_EQ(actions[1].stream, s1.id());
  EXPECT_GT(actions[1].time_us, 0);
  allocator.clear_history();
  EXPECT_TRUE(allocator.history().empty());
}

TEST_F(CachingAllocatorTest, HistoryRingKeepsTheNewest) {
  MemoryHistoryOptions options;
  options.max_entries = 3;
  allocator.enable_history(options);
  for (int i = 0; i < 4; ++i) allocator.free(allocate(kKiB));
  std::vector<MemoryAction> actions = allocator.history();
  using K = MemoryAction;
  EXPECT_EQ(kinds_of(actions), (std::vector<MemoryAction::Kind>{K::kAlloc, K::kFreeRequested, K::kFreeCompleted}));
}

int gathered = 0;
MemoryContext count_gather() {
  ++gathered;
  return std::make_shared<int>(gathered);
}

TEST_F(CachingAllocatorTest, SnapshotCoversEachSegmentWithItsBlocksAndContexts) {
  MemoryHistoryOptions options;
  options.gatherer = &count_gather;
  allocator.enable_history(options);
  void* small = allocate(100);
  void* large = allocate(11 * kMiB);
  void* freed = allocate(2 * kKiB);
  allocator.free(freed);
  std::vector<CachingAllocator::SegmentSnapshot> segments = allocator.snapshot();
  ASSERT_EQ(segments.size(), 2u);
  uint64_t reserved = 0;
  for (const auto& segment : segments) {
    reserved += segment.total_size;
    uint64_t covered = 0;
    for (const auto& block : segment.blocks) {
      EXPECT_EQ(block.address, segment.address + covered);
      covered += block.size;
    }
    EXPECT_EQ(covered, segment.total_size);
  }
  EXPECT_EQ(static_cast<int64_t>(reserved), allocator.stats().reserved_bytes[kAllPools].current);
  const auto& small_segment = segments[0].small ? segments[0] : segments[1];
  ASSERT_EQ(small_segment.blocks[0].address, reinterpret_cast<uint64_t>(small));
  EXPECT_EQ(small_segment.blocks[0].state, CachingAllocator::BlockSnapshot::kActiveAllocated);
  EXPECT_EQ(small_segment.blocks[0].requested, 100u);
  EXPECT_NE(small_segment.blocks[0].context, nullptr);
  EXPECT_EQ(small_segment.blocks[1].state, CachingAllocator::BlockSnapshot::kInactive);
  EXPECT_EQ(small_segment.allocated, 512u);
  EXPECT_EQ(gathered, 4);  // three allocations and one free
  allocator.free(small);
  allocator.free(large);
}

}  // namespace
}  // namespace kiln
