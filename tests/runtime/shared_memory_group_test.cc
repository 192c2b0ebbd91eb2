#include "kiln/runtime/shared_memory_group.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace kiln {
namespace {

using Clock = SharedMemoryGroup::Clock;
using namespace std::chrono_literals;

std::string unique_name() {
  static std::atomic<int> counter{0};
  return "/kiln-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

// The group's ranks, each with its own mapping, as separate processes have.
std::vector<std::unique_ptr<SharedMemoryGroup>> make_group(const std::string& name, int size,
                                                          size_t slot_bytes) {
  std::vector<std::unique_ptr<SharedMemoryGroup>> ranks;
  auto first = SharedMemoryGroup::create(name, size, slot_bytes);
  EXPECT_TRUE(first.ok()) << first.status().message();
  ranks.push_back(std::move(first.value()));
  for (int rank = 1; rank < size; ++rank) {
    auto other = SharedMemoryGroup::open(name, rank, size);
    EXPECT_TRUE(other.ok()) << other.status().message();
    ranks.push_back(std::move(other.value()));
  }
  EXPECT_TRUE(SharedMemoryGroup::unlink(name).ok());
  return ranks;
}

TEST(SharedMemoryGroupTest, RanksReadEachOthersSlotsRoundAfterRound) {
  // One barrier per round: each rank fills its slot with the round number,
  // meets the others, then checks every slot. A rank that ran two rounds
  // ahead would overwrite a slot another still reads.
  constexpr int kSize = 3;
  constexpr int kRounds = 300;
  constexpr size_t kBytes = 4096;
  auto ranks = make_group(unique_name(), kSize, kBytes);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kSize; ++r) {
    threads.emplace_back([&, r] {
      SharedMemoryGroup& group = *ranks[r];
      for (int round = 0; round < kRounds; ++round) {
        const int buffer = group.begin_round();
        std::memset(group.slot(buffer, r), round & 0xff, kBytes);
        SharedMemoryGroup::Descriptor descriptor;
        descriptor.words[0] = round;
        group.publish(buffer, descriptor);
        ASSERT_TRUE(group.barrier(Clock::now() + 10s).ok());
        for (int peer = 0; peer < kSize; ++peer) {
          const char* slot = group.slot(buffer, peer);
          if (slot[0] != static_cast<char>(round & 0xff) || slot[kBytes - 1] != slot[0]) ++wrong;
          if (group.descriptor(buffer, peer).words[0] != round) ++wrong;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(SharedMemoryGroupTest, AMissingRankTimesOutByNameAndBreaksTheGroup) {
  auto ranks = make_group(unique_name(), 3, 4096);
  std::thread present([&] { ranks[2]->barrier(Clock::now() + 200ms); });
  const Clock::time_point start = Clock::now();
  Status status = ranks[0]->barrier(Clock::now() + 200ms);
  present.join();
  EXPECT_LT(Clock::now() - start, 2s);
  ASSERT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.message();
  EXPECT_NE(status.message().find("timed out waiting for rank 1 at barrier 1"), std::string::npos)
      << status.message();
  EXPECT_EQ(status.message().find("rank 2"), std::string::npos) << status.message();
  // The counts are out of step now: later barriers fail at once.
  Status later = ranks[0]->barrier(Clock::now() + 10s);
  EXPECT_EQ(later.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(later.message().find("an earlier collective on this group failed"), std::string::npos);
}

TEST(SharedMemoryGroupTest, ARankWhoseProcessExitedFailsTheWaitBeforeTheDeadline) {
  const std::string name = unique_name();
  auto created = SharedMemoryGroup::create(name, 2, 4096);
  ASSERT_TRUE(created.ok()) << created.status().message();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto opened = SharedMemoryGroup::open(name, 1, 2);
    _exit(opened.ok() ? 0 : 1);
  }
  // Left unreaped while the parent waits: a zombie counts as exited.
  const Clock::time_point start = Clock::now();
  Status status = created.value()->barrier(Clock::now() + 20s);
  EXPECT_LT(Clock::now() - start, 5s);
  int child_status = 0;
  waitpid(child, &child_status, 0);
  EXPECT_TRUE(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0);
  SharedMemoryGroup::unlink(name);
  ASSERT_EQ(status.code(), StatusCode::kUnavailable) << status.message();
  EXPECT_NE(status.message().find("rank 1 (process " + std::to_string(child) + " exited)"), std::string::npos)
      << status.message();
}

TEST(SharedMemoryGroupTest, BarriersWorkAcrossProcesses) {
  const std::string name = unique_name();
  auto created = SharedMemoryGroup::create(name, 2, 4096);
  ASSERT_TRUE(created.ok()) << created.status().message();
  SharedMemoryGroup& group = *created.value();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto opened = SharedMemoryGroup::open(name, 1, 2);
    if (!opened.ok()) _exit(2);
    SharedMemoryGroup& peer = *opened.value();
    for (int round = 0; round < 100; ++round) {
      const int buffer = peer.begin_round();
      peer.slot(buffer, 1)[0] = static_cast<char>(round);
      if (!peer.barrier(Clock::now() + 10s).ok()) _exit(3);
      if (peer.slot(buffer, 0)[0] != static_cast<char>(round + 1)) _exit(4);
    }
    _exit(0);
  }
  bool all_seen = true;
  for (int round = 0; round < 100; ++round) {
    const int buffer = group.begin_round();
    group.slot(buffer, 0)[0] = static_cast<char>(round + 1);
    ASSERT_TRUE(group.barrier(Clock::now() + 10s).ok());
    all_seen = all_seen && group.slot(buffer, 1)[0] == static_cast<char>(round);
  }
  int child_status = 0;
  waitpid(child, &child_status, 0);
  SharedMemoryGroup::unlink(name);
  EXPECT_TRUE(all_seen);
  EXPECT_TRUE(WIFEXITED(child_status));
  EXPECT_EQ(WEXITSTATUS(child_status), 0);
}

TEST(SharedMemoryGroupTest, OpeningChecksTheNameAndTheGroupSize) {
  const std::string name = unique_name();
  auto created = SharedMemoryGroup::create(name, 2, 4096);
  ASSERT_TRUE(created.ok());
  EXPECT_FALSE(SharedMemoryGroup::create(name, 2, 4096).ok());  // the name is taken
  auto wrong_size = SharedMemoryGroup::open(name, 1, 3);
  EXPECT_FALSE(wrong_size.ok());
  EXPECT_FALSE(SharedMemoryGroup::open(name, 2, 2).ok());  // no such rank
  EXPECT_TRUE(SharedMemoryGroup::unlink(name).ok());
  auto missing = SharedMemoryGroup::open(name, 1, 2);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find(name), std::string::npos);
}

}  // namespace
}  // namespace kiln
