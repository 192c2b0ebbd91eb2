#include "kiln/compiler/passes/memory_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace kiln::compiler {
namespace {

BufferRequest request(uint64_t bytes, int32_t first_step, int32_t last_step) {
  BufferRequest result;
  result.bytes = bytes;
  result.first_step = first_step;
  result.last_step = last_step;
  return result;
}

// Plans `requests` and fails the test unless check_memory_plan accepts the plan.
MemoryPlan checked_plan(const std::vector<BufferRequest>& requests) {
  MemoryPlan plan = plan_memory(requests);
  EXPECT_EQ(check_memory_plan(requests, plan), "");
  return plan;
}

// The largest sum of aligned sizes live at one step: no valid plan is smaller.
uint64_t peak_live_bytes(const std::vector<BufferRequest>& requests) {
  std::map<int32_t, uint64_t> live_at_step;
  for (const BufferRequest& buffer : requests) {
    for (int32_t step = buffer.first_step; step <= buffer.last_step; ++step) {
      live_at_step[step] += align_plan_bytes(buffer.bytes);
    }
  }
  uint64_t peak = 0;
  for (const auto& [step, bytes] : live_at_step) peak = std::max(peak, bytes);
  return peak;
}

// Whether two buffers live at one step overlap in memory, by comparing every
// pair: the slow, obvious check that the sweep in check_memory_plan must match.
bool any_pair_overlaps(const std::vector<BufferRequest>& requests, const MemoryPlan& plan) {
  for (size_t a = 0; a < requests.size(); ++a) {
    for (size_t b = a + 1; b < requests.size(); ++b) {
      if (requests[a].bytes == 0 || requests[b].bytes == 0) continue;
      bool live_together = requests[a].first_step <= requests[b].last_step &&
                           requests[b].first_step <= requests[a].last_step;
      bool bytes_overlap = plan.offsets[a] < plan.offsets[b] + requests[b].bytes &&
                           plan.offsets[b] < plan.offsets[a] + requests[a].bytes;
      if (live_together && bytes_overlap) return true;
    }
  }
  return false;
}

// Random requests over steps [0, steps]: mostly small sizes (often not
// aligned, sometimes zero), one in six large.
std::vector<BufferRequest> random_requests(std::mt19937& generator, int count, int32_t steps) {
  std::vector<BufferRequest> requests;
  for (int index = 0; index < count; ++index) {
    int32_t first = std::uniform_int_distribution<int32_t>(-3, steps)(generator);
    int32_t length = std::uniform_int_distribution<int32_t>(0, 8)(generator);
    uint64_t bytes = std::uniform_int_distribution<uint64_t>(0, 5)(generator) == 0
                         ? std::uniform_int_distribution<uint64_t>(1 << 16, 1 << 22)(generator)
                         : std::uniform_int_distribution<uint64_t>(0, 3000)(generator);
    requests.push_back(request(bytes, first, first + length));
  }
  return requests;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(MemoryPlan, EmptyRequestsGiveAnEmptyArena) {
  MemoryPlan plan = checked_plan({});
  EXPECT_TRUE(plan.offsets.empty());
  EXPECT_EQ(plan.arena_bytes, 0u);
  EXPECT_EQ(plan.naive_bytes, 0u);
}

TEST(MemoryPlan, DisjointLifetimesShareOffsetZero) {
  std::vector<BufferRequest> requests = {request(1000, 0, 1), request(640, 2, 3),
                                         request(4096, 4, 4)};
  MemoryPlan plan = checked_plan(requests);
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_EQ(plan.arena_bytes, 4096u);
  EXPECT_EQ(plan.naive_bytes, 1024u + 640u + 4096u);
}

TEST(MemoryPlan, OverlappingLifetimesDoNotOverlapInMemory) {
  // Intervals that only touch at one step (1) are still live together there.
  std::vector<BufferRequest> requests = {request(256, 0, 1), request(256, 1, 2)};
  MemoryPlan plan = checked_plan(requests);
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
  EXPECT_EQ(plan.arena_bytes, 512u);
  // Largest first, so the 512-byte buffer takes offset 0 and the other sits above it.
  requests = {request(128, 0, 5), request(512, 3, 4)};
  plan = checked_plan(requests);
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{512, 0}));
  EXPECT_EQ(plan.arena_bytes, 640u);
}

TEST(MemoryPlan, OffsetsAndArenaAreAligned) {
  std::vector<BufferRequest> requests = {request(1, 0, 2), request(65, 0, 2), request(63, 1, 2),
                                         request(129, 2, 2)};
  MemoryPlan plan = checked_plan(requests);
  for (uint64_t offset : plan.offsets) EXPECT_EQ(offset % kPlanAlignment, 0u);
  EXPECT_EQ(plan.arena_bytes % kPlanAlignment, 0u);
  EXPECT_EQ(plan.naive_bytes, 64u + 128u + 64u + 192u);
  // All four are live at step 2, so nothing is reused.
  EXPECT_EQ(plan.arena_bytes, plan.naive_bytes);
  EXPECT_EQ(align_plan_bytes(0), 0u);
  EXPECT_EQ(align_plan_bytes(64), 64u);
  EXPECT_EQ(align_plan_bytes(65), 128u);
}

TEST(MemoryPlan, ZeroByteRequestsTakeNoSpace) {
  std::vector<BufferRequest> requests = {request(0, 0, 9), request(100, 0, 9), request(0, 3, 4),
                                         request(100, 2, 5)};
  MemoryPlan plan = checked_plan(requests);
  EXPECT_EQ(plan.offsets[0], 0u);
  EXPECT_EQ(plan.offsets[2], 0u);
  EXPECT_EQ(plan.arena_bytes, 256u);
  EXPECT_EQ(plan.naive_bytes, 256u);
  plan = checked_plan({request(0, 0, 0), request(0, 0, 0)});
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(plan.arena_bytes, 0u);
}

TEST(MemoryPlan, ChainReusesTheFirstBufferForTheThird) {
  // a -> b -> c: step 1 reads a and writes b, step 2 reads b and writes c.
  std::vector<BufferRequest> requests = {request(1024, 0, 1), request(1024, 1, 2),
                                         request(1024, 2, 3)};
  MemoryPlan plan = checked_plan(requests);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
  EXPECT_EQ(plan.arena_bytes, 2048u);
  EXPECT_EQ(plan.naive_bytes, 3072u);
}

TEST(MemoryPlan, BestFitTakesTheSmallestGapThatFits) {
  // Placed first: request 2 at [0, 128), 0 at [128, 192), 1 at [192, 256),
  // 4 at [256, 320). Request 3 (step 3) is live with 0 and 4 only, so it sees
  // a 128-byte gap at 0 and a 64-byte gap at 192: best fit takes the latter,
  // keeping the larger gap whole.
  std::vector<BufferRequest> requests = {request(64, 1, 3), request(64, 1, 2), request(128, 1, 1),
                                         request(64, 3, 3), request(64, 1, 3)};
  MemoryPlan plan = checked_plan(requests);
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{128, 192, 0, 192, 256}));
  EXPECT_EQ(plan.arena_bytes, 320u);
}

TEST(MemoryPlan, SameRequestsGiveTheSamePlan) {
  std::vector<BufferRequest> requests;
  for (int32_t index = 0; index < 50; ++index) {
    requests.push_back(request(64 * (index % 7 + 1), index % 11, index % 11 + index % 5));
  }
  MemoryPlan first = checked_plan(requests);
  MemoryPlan second = plan_memory(requests);
  EXPECT_EQ(first.offsets, second.offsets);
  EXPECT_EQ(first.arena_bytes, second.arena_bytes);
}

TEST(MemoryPlan, RandomInstancesAreValidAndBetweenTheBounds) {
  std::mt19937 generator(20261203);
  for (int instance = 0; instance < 400; ++instance) {
    int count = std::uniform_int_distribution<int>(1, 80)(generator);
    int32_t steps = std::uniform_int_distribution<int32_t>(1, 40)(generator);
    std::vector<BufferRequest> requests = random_requests(generator, count, steps);
    MemoryPlan plan = plan_memory(requests);
    ASSERT_EQ(check_memory_plan(requests, plan), "") << "instance " << instance;
    EXPECT_LE(plan.arena_bytes, plan.naive_bytes) << "instance " << instance;
    EXPECT_GE(plan.arena_bytes, peak_live_bytes(requests)) << "instance " << instance;
    EXPECT_FALSE(any_pair_overlaps(requests, plan)) << "instance " << instance;
  }
}

TEST(MemoryPlan, EqualSizesReachTheLowerBound) {
  // With one size the problem is interval colouring, which placing by start
  // step solves exactly: the arena is the peak of live bytes.
  std::mt19937 generator(7);
  for (int instance = 0; instance < 200; ++instance) {
    std::vector<BufferRequest> requests;
    int count = std::uniform_int_distribution<int>(1, 60)(generator);
    for (int index = 0; index < count; ++index) {
      int32_t first = std::uniform_int_distribution<int32_t>(0, 30)(generator);
      int32_t length = std::uniform_int_distribution<int32_t>(0, 6)(generator);
      requests.push_back(request(200, first, first + length));
    }
    MemoryPlan plan = checked_plan(requests);
    EXPECT_EQ(plan.arena_bytes, peak_live_bytes(requests)) << "instance " << instance;
  }
}

TEST(MemoryPlanCheck, CatchesOverlappingBuffers) {
  std::vector<BufferRequest> requests = {request(256, 0, 2), request(128, 1, 3),
                                         request(128, 3, 4)};
  MemoryPlan plan = checked_plan(requests);
  plan.offsets[1] = plan.offsets[0] + 192;  // the last 64 bytes of request 0
  plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[1] + 128);
  std::string error = check_memory_plan(requests, plan);
  EXPECT_TRUE(contains(error, "requests 0 and 1 are both live at step 1")) << error;
  EXPECT_TRUE(contains(error, "[0, 256) and [192, 320)")) << error;
}

TEST(MemoryPlanCheck, AgreesWithPairwiseComparisonOnMovedBuffers) {
  // Moves one buffer of a valid plan to a random aligned offset inside the
  // arena; the sweep must report an overlap exactly when some pair overlaps.
  std::mt19937 generator(42);
  int caught = 0;
  for (int instance = 0; instance < 300; ++instance) {
    int count = std::uniform_int_distribution<int>(2, 40)(generator);
    std::vector<BufferRequest> requests = random_requests(generator, count, 20);
    MemoryPlan plan = plan_memory(requests);
    size_t moved = std::uniform_int_distribution<size_t>(0, requests.size() - 1)(generator);
    if (requests[moved].bytes == 0) continue;
    uint64_t slots = (plan.arena_bytes - align_plan_bytes(requests[moved].bytes)) / kPlanAlignment;
    plan.offsets[moved] =
        std::uniform_int_distribution<uint64_t>(0, slots)(generator) * kPlanAlignment;
    std::string error = check_memory_plan(requests, plan);
    bool overlaps = any_pair_overlaps(requests, plan);
    EXPECT_EQ(contains(error, "overlap in memory"), overlaps) << "instance " << instance << error;
    EXPECT_EQ(error.empty(), !overlaps) << "instance " << instance << error;
    caught += overlaps;
  }
  EXPECT_GT(caught, 50);  // the moves do break plans, so the comparison means something
}

TEST(MemoryPlanCheck, CatchesEachBrokenInvariant) {
  std::vector<BufferRequest> requests = {request(100, 0, 1), request(0, 0, 1), request(64, 1, 2)};
  const MemoryPlan good = checked_plan(requests);

  MemoryPlan broken = good;
  broken.offsets.pop_back();
  EXPECT_TRUE(contains(check_memory_plan(requests, broken), "2 offsets for 3 requests"));

  broken = good;
  broken.offsets[2] += 8;
  EXPECT_TRUE(contains(check_memory_plan(requests, broken), "request 2 has offset"));

  broken = good;
  broken.offsets[1] = 64;
  EXPECT_TRUE(contains(check_memory_plan(requests, broken), "request 1 has zero bytes"));

  broken = good;
  broken.arena_bytes -= 64;
  EXPECT_TRUE(contains(check_memory_plan(requests, broken), "ends past the arena"));

  broken = good;
  broken.arena_bytes += 1;
  EXPECT_TRUE(contains(check_memory_plan(requests, broken), "not a multiple of 64"));

  broken = good;
  broken.naive_bytes += 64;
  EXPECT_TRUE(contains(check_memory_plan(requests, broken), "naive_bytes"));
}

TEST(MemoryPlanCheck, BadRequestsGiveAnEmptyPlanAndAClearError) {
  std::vector<BufferRequest> requests = {request(64, 0, 1), request(64, 5, 2)};
  EXPECT_EQ(check_buffer_requests(requests),
            "memory plan: request 1 has last_step 2 before first_step 5");
  MemoryPlan plan = plan_memory(requests);
  EXPECT_TRUE(plan.offsets.empty());
  EXPECT_EQ(check_memory_plan(requests, plan), check_buffer_requests(requests));

  const uint64_t huge = std::numeric_limits<uint64_t>::max();
  EXPECT_TRUE(contains(check_buffer_requests({request(huge, 0, 0)}), "too many to align"));
  std::string overflow = check_buffer_requests({request(huge / 2, 0, 0), request(huge / 2, 1, 1)});
  EXPECT_TRUE(contains(overflow, "request 1 makes the total size")) << overflow;
  EXPECT_TRUE(plan_memory({request(huge / 2, 0, 0), request(huge / 2, 1, 1)}).offsets.empty());
}

}  // namespace
}  // namespace kiln::compiler
