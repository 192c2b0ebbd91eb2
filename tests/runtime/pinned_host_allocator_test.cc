#include "kiln/runtime/pinned_host_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "test_util.h"

namespace kiln {
namespace {

using testing_util::Gate;

class PinnedHostAllocatorTest : public ::testing::Test {
 protected:
  char* allocate(size_t bytes) {
    StatusOr<void*> result = allocator.allocate(bytes);
    EXPECT_TRUE(result.ok()) << result.status().message();
    return result.ok() ? static_cast<char*>(result.value()) : nullptr;
  }

  Stream stream{0, 1, /*blocking=*/false};
  PinnedHostAllocator allocator;  // declared last: destroyed before the stream
};

TEST_F(PinnedHostAllocatorTest, ZeroBytesReturnsNull) {
  StatusOr<void*> result = allocator.allocate(0);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.value(), nullptr);
  EXPECT_EQ(allocator.stats().total_allocations, 0);
  allocator.free(nullptr);
}

TEST_F(PinnedHostAllocatorTest, RoundsUpToAPowerOfTwoOfAtLeast4KiB) {
  struct Case {
    size_t request;
    int64_t rounded;
  };
  int64_t expected_total = 0;
  std::vector<char*> blocks;
  for (Case c : {Case{1, 4096}, Case{4096, 4096}, Case{4097, 8192}, Case{5000, 8192},
                 Case{65536, 65536}, Case{100000, 131072}}) {
    char* block = allocate(c.request);
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 4096, 0u) << "page-aligned";
    std::memset(block, 0x5a, c.request);  // writable
    expected_total += c.rounded;
    EXPECT_EQ(allocator.stats().allocated_bytes, expected_total) << c.request;
    blocks.push_back(block);
  }
  for (char* block : blocks) allocator.free(block);
}

TEST_F(PinnedHostAllocatorTest, ReusesACachedBlockOfTheSameSizeClass) {
  char* first = allocate(100);
  allocator.free(first);
  EXPECT_EQ(allocate(3000), first);  // same 4 KiB class
  char* bigger = allocate(5000);     // 8 KiB class: a new block
  EXPECT_NE(bigger, first);
  allocator.free(first);
  allocator.free(bigger);
  EXPECT_EQ(allocate(8192), bigger);
  EXPECT_EQ(allocator.stats().segments, 2);
  allocator.free(bigger);
}

TEST_F(PinnedHostAllocatorTest, IsPinnedForInteriorPointersOnly) {
  char* block = allocate(10000);  // 16 KiB
  EXPECT_TRUE(allocator.is_pinned(block));
  EXPECT_TRUE(allocator.is_pinned(block + 1));
  EXPECT_TRUE(allocator.is_pinned(block + 16383));

  void* heap = std::malloc(4096);
  EXPECT_FALSE(allocator.is_pinned(heap));
  std::free(heap);
  int on_stack = 0;
  EXPECT_FALSE(allocator.is_pinned(&on_stack));
  EXPECT_FALSE(allocator.is_pinned(nullptr));

  allocator.free(block);
  EXPECT_TRUE(allocator.is_pinned(block + 100));  // cached blocks stay pinned
  allocator.empty_cache();
  EXPECT_FALSE(allocator.is_pinned(block));
  EXPECT_FALSE(allocator.is_pinned(block + 100));
}

TEST_F(PinnedHostAllocatorTest, RecordStreamDelaysReuseUntilTheStreamWorkFinishes) {
  Gate gate;
  char* first = allocate(4096);
  ASSERT_TRUE(gate.hold(stream, "test::copy").ok());  // a queued non_blocking copy
  allocator.record_stream(first + 128, stream);       // interior pointers are accepted
  allocator.free(first);
  char* second = allocate(4096);
  EXPECT_NE(second, first) << "reused a buffer a queued copy may still read";
  // empty_cache must not unmap it either.
  allocator.empty_cache();
  EXPECT_TRUE(allocator.is_pinned(first));

  gate.open();
  ASSERT_TRUE(stream.synchronize().ok());
  char* third = allocate(4096);
  EXPECT_EQ(third, first);
  allocator.free(second);
  allocator.free(third);
}

TEST_F(PinnedHostAllocatorTest, RecordStreamOnAFreedBlockIsIgnored) {
  Gate gate;
  char* first = allocate(4096);
  allocator.free(first);
  ASSERT_TRUE(gate.hold(stream).ok());
  allocator.record_stream(first, stream);  // not live: no effect
  EXPECT_EQ(allocate(4096), first);
  gate.open();
  allocator.free(first);
}

TEST_F(PinnedHostAllocatorTest, EmptyCacheUnmapsCachedBlocks) {
  char* a = allocate(4096);
  char* b = allocate(70000);
  char* live = allocate(4096);
  allocator.free(a);
  allocator.free(b);
  PinnedHostStats before = allocator.stats();
  EXPECT_EQ(before.segments, 3);
  EXPECT_EQ(before.reserved_bytes, 4096 + 131072 + 4096);
  allocator.empty_cache();
  PinnedHostStats after = allocator.stats();
  EXPECT_EQ(after.segments, 1);
  EXPECT_EQ(after.reserved_bytes, 4096);
  EXPECT_EQ(after.allocated_bytes, 4096);
  EXPECT_TRUE(allocator.is_pinned(live));
  live[4095] = 1;
  allocator.free(live);
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().reserved_bytes, 0);
  EXPECT_EQ(allocator.stats().segments, 0);
}

TEST_F(PinnedHostAllocatorTest, Statistics) {
  char* a = allocate(100);    // 4 KiB
  char* b = allocate(10000);  // 16 KiB
  PinnedHostStats stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes, 4096 + 16384);
  EXPECT_EQ(stats.reserved_bytes, 4096 + 16384);
  EXPECT_EQ(stats.allocations, 2);
  EXPECT_EQ(stats.segments, 2);
  EXPECT_EQ(stats.total_allocations, 2);

  allocator.free(a);
  stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes, 16384);
  EXPECT_EQ(stats.reserved_bytes, 4096 + 16384);
  EXPECT_EQ(stats.allocations, 1);
  EXPECT_EQ(stats.segments, 2);

  char* again = allocate(200);  // reused: no new segment
  stats = allocator.stats();
  EXPECT_EQ(again, a);
  EXPECT_EQ(stats.segments, 2);
  EXPECT_EQ(stats.allocations, 2);
  EXPECT_EQ(stats.total_allocations, 3);

  allocator.free(again);
  allocator.free(b);
  allocator.free(b);  // a double free is ignored
  int on_stack = 0;
  allocator.free(&on_stack);  // an unknown pointer is ignored
  stats = allocator.stats();
  EXPECT_EQ(stats.allocations, 0);
  EXPECT_EQ(stats.allocated_bytes, 0);
  EXPECT_EQ(stats.total_allocations, 3);
}

TEST_F(PinnedHostAllocatorTest, AbsurdlyLargeRequestsAreOutOfMemory) {
  for (size_t bytes : {SIZE_MAX, SIZE_MAX / 2 + 2, size_t{1} << 62}) {
    StatusOr<void*> result = allocator.allocate(bytes);
    EXPECT_FALSE(result.ok()) << bytes;
    if (!result.ok()) {
      EXPECT_EQ(result.status().code(), StatusCode::kOutOfMemory);
    }
  }
  PinnedHostStats stats = allocator.stats();
  EXPECT_EQ(stats.allocations, 0);
  EXPECT_EQ(stats.reserved_bytes, 0);
  char* small = allocate(10);
  EXPECT_NE(small, nullptr);
  allocator.free(small);
}

TEST_F(PinnedHostAllocatorTest, ConcurrentUse) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        size_t bytes = size_t{1} << (8 + (i + t) % 8);
        StatusOr<void*> result = allocator.allocate(bytes);
        if (!result.ok()) {
          failures.fetch_add(1);
          continue;
        }
        auto* block = static_cast<unsigned char*>(result.value());
        std::memset(block, t, bytes);
        if (!allocator.is_pinned(block + bytes - 1)) failures.fetch_add(1);
        for (size_t k = 0; k < bytes; k += 997) {
          if (block[k] != t) failures.fetch_add(1);
        }
        allocator.free(block);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  PinnedHostStats stats = allocator.stats();
  EXPECT_EQ(stats.allocations, 0);
  EXPECT_EQ(stats.allocated_bytes, 0);
  EXPECT_EQ(stats.total_allocations, kThreads * 500);
}

}  // namespace
}  // namespace kiln
