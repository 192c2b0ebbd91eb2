// SharedMemoryGroup: the ranks of one collective group that run on one host,
// meeting in a POSIX shared-memory segment.
//
// Gloo moves every message through TCP on the loopback device: a 1 KiB
// all_reduce between two processes costs about 0.5 ms on two cores, almost
// all of it thread wake-ups in both processes. Ranks on one host can instead
// write into memory they all map, and wait for each other on counters in that
// memory, as NCCL's and oneCCL's shared-memory transports do. This class is
// that meeting place; what the ranks compute there is the caller's
// (csrc/kiln/distributed/shared_memory_collectives.h).
//
// The segment holds, for each of two buffer sets, one slot of slot_bytes per
// rank and one result area, and per rank an arrival counter, its process id
// and a small descriptor per buffer set. Work proceeds in rounds; round n uses
// buffer set n % 2, so a rank may fill the next round's slot while slower
// ranks still read this round's. Round n+2 reuses set n % 2, and no rank
// starts it before every rank has arrived at a barrier of round n+1, which each
// reaches only after it finished reading round n.
//
// barrier() publishes this rank's arrival and waits until every rank has
// arrived at the same barrier: first spinning briefly (when the host has a
// core per rank), then sleeping on a futex in the shared memory, woken by the
// last rank to arrive. It gives up at `deadline` with DeadlineExceeded naming
// the ranks that never came, and sooner with Unavailable when such a rank's
// process has exited. After a failed barrier the ranks' counts are out of
// step, so every later barrier fails at once (NCCL aborts a communicator in
// the same case).
//
// Rank 0 creates the segment under a name it chooses and hands the name to
// the others (through the process group's store); once all have opened it,
// rank 0 unlinks the name, so the memory goes when the last rank unmaps it,
// even if a process is killed. The pages are reserved when it is created: a
// full /dev/shm fails create() instead of killing a process later (SIGBUS).
//
// One thread at a time per object (the collective's caller holds a lock).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kiln/base/status.h"

namespace kiln {

class SharedMemoryGroup {
 public:
  using Clock = std::chrono::steady_clock;

  // What a rank publishes about a round, for the others to compare with
  // theirs (the caller's meaning: dtype, op, element count).
  struct Descriptor {
    int64_t words[6] = {0, 0, 0, 0, 0, 0};
    bool operator==(const Descriptor& other) const;
  };

  static constexpr size_t kDefaultSlotBytes = size_t{1} << 20;

  // Rank 0: creates the segment `name` ("/kiln-..."), failing if it exists.
  static StatusOr<std::unique_ptr<SharedMemoryGroup>> create(const std::string& name, int size,
                                                             size_t slot_bytes);
  // Other ranks: opens the segment rank 0 created.
  static StatusOr<std::unique_ptr<SharedMemoryGroup>> open(const std::string& name, int rank,
                                                           int size);
  // Removes the name; mappings stay valid.
  static Status unlink(const std::string& name);

  ~SharedMemoryGroup();
  SharedMemoryGroup(const SharedMemoryGroup&) = delete;
  SharedMemoryGroup& operator=(const SharedMemoryGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t slot_bytes() const { return slot_bytes_; }

  // Starts the next round and returns its buffer set (0 or 1).
  int begin_round();
  char* slot(int buffer, int rank) const;
  char* result(int buffer) const;
  // This rank's descriptor for `buffer`, and any rank's.
  void publish(int buffer, const Descriptor& descriptor);
  const Descriptor& descriptor(int buffer, int rank) const;

  // Arrives at the next barrier and waits for every rank (see the top).
  Status barrier(Clock::time_point deadline);
  // The failure that broke the group; ok while it works.
  const Status& failure() const { return failure_; }

 private:
  struct Header;
  struct RankControl;
  SharedMemoryGroup(void* base, size_t bytes, int rank, int size, size_t slot_bytes);
  static size_t control_offset();
  static size_t data_offset(int size);
  static size_t segment_bytes(int size, size_t slot_bytes);
  Header& header() const;
  RankControl& control(int rank) const;
  // Waits until `rank` has arrived at barrier `target`.
  Status wait_for(int rank, uint32_t target, Clock::time_point deadline);
  Status missing_ranks(uint32_t target, const char* what) const;

  char* base_;
  size_t bytes_;
  int rank_;
  int size_;
  size_t slot_bytes_;
  uint32_t barriers_ = 0;  // barriers this rank has passed
  uint64_t rounds_ = 0;
  bool spin_;              // a core per rank: spin briefly before sleeping
  Status failure_;
};

}  // namespace kiln
