#include "kiln/runtime/shared_memory_group.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <new>
#include <thread>

namespace kiln {

constexpr uint64_t kMagic = 0x6b696c6e73686d31;  // "kilnshm1"
constexpr size_t kLine = 64;
constexpr size_t kPage = 4096;
// Spin this long for a peer before sleeping: a peer on another core usually
// arrives sooner, and a futex sleep and wake-up costs tens of microseconds.
constexpr auto kSpin = std::chrono::microseconds(50);
// Sleeps are cut into slices this long, to notice a peer that exited.
constexpr auto kSleepSlice = std::chrono::milliseconds(50);

static_assert(std::atomic<uint32_t>::is_always_lock_free && sizeof(std::atomic<uint32_t>) == 4,
              "futex words must be plain 32-bit atomics");

struct alignas(kLine) SharedMemoryGroup::Header {
  uint64_t magic;
  int32_t size;
  uint64_t slot_bytes;
  std::atomic<uint32_t> sleepers;  // ranks sleeping on a futex right now
};

struct alignas(kLine) SharedMemoryGroup::RankControl {
  std::atomic<uint32_t> arrived;  // barriers this rank has reached; its futex word
  int32_t pid;
  Descriptor descriptors[2];
};

namespace {

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

std::string errno_text(const char* what, const std::string& name) {
  return std::string(what) + " '" + name + "' failed: " + std::strerror(errno);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void futex_wait(std::atomic<uint32_t>* word, uint32_t seen, std::chrono::nanoseconds timeout) {
  timespec relative{static_cast<time_t>(timeout.count() / 1000000000),
                    static_cast<long>(timeout.count() % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &relative, nullptr, 0);
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Whether `pid` is gone: no such process, or a zombie nobody has reaped yet.
bool process_exited(int32_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

bool reached(uint32_t arrived, uint32_t target) {
  return static_cast<int32_t>(arrived - target) >= 0;  // counts wrap
}

}  // namespace

bool SharedMemoryGroup::Descriptor::operator==(const Descriptor& other) const {
  return std::equal(std::begin(words), std::end(words), std::begin(other.words));
}

size_t SharedMemoryGroup::control_offset() { return round_up(sizeof(Header), kLine); }

size_t SharedMemoryGroup::data_offset(int size) {
  return round_up(control_offset() + static_cast<size_t>(size) * sizeof(RankControl), kPage);
}

size_t SharedMemoryGroup::segment_bytes(int size, size_t slot_bytes) {
  // Per buffer set: a slot per rank and the result area.
  return data_offset(size) + 2 * (static_cast<size_t>(size) + 1) * slot_bytes;
}

StatusOr<std::unique_ptr<SharedMemoryGroup>> SharedMemoryGroup::create(const std::string& name,
                                                                       int size, size_t slot_bytes) {
  if (size < 1) return invalid_argument("a shared-memory group needs at least one rank");
  slot_bytes = round_up(std::max<size_t>(slot_bytes, kPage), kPage);
  const size_t bytes = segment_bytes(size, slot_bytes);
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return unavailable(errno_text("shm_open", name));
  // Reserve every page now: touching a page /dev/shm cannot hold later
  // would raise SIGBUS in the middle of a collective.
  int reserve = ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? posix_fallocate(fd, 0, static_cast<off_t>(bytes))
                                                              : errno;
  if (reserve != 0) {
    close(fd);
    shm_unlink(name.c_str());
    errno = reserve;
    return out_of_memory("reserving " + std::to_string(bytes) + " bytes for " + errno_text("the segment", name));
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(name.c_str());
    return unavailable(errno_text("mmap", name));
  }
  auto* header = new (base) Header();
  header->size = size;
  header->slot_bytes = slot_bytes;
  header->sleepers.store(0);
  for (int rank = 0; rank < size; ++rank) {
    auto* control = new (static_cast<char*>(base) + control_offset() + rank * sizeof(RankControl)) RankControl();
    control->arrived.store(0);
    control->pid = 0;
  }
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kMagic;
  return std::unique_ptr<SharedMemoryGroup>(new SharedMemoryGroup(base, bytes, 0, size, slot_bytes));
}

StatusOr<std::unique_ptr<SharedMemoryGroup>> SharedMemoryGroup::open(const std::string& name, int rank,
                                                                     int size) {
  if (rank < 0 || rank >= size) {
    return invalid_argument("rank " + std::to_string(rank) + " is outside a group of " + std::to_string(size));
  }
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return unavailable(errno_text("shm_open", name));
  struct stat status {};
  if (fstat(fd, &status) != 0 || static_cast<size_t>(status.st_size) < data_offset(size)) {
    close(fd);
    return unavailable("the shared-memory segment '" + name + "' is too small for " + std::to_string(size) +
                       " ranks");
  }
  const size_t bytes = static_cast<size_t>(status.st_size);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return unavailable(errno_text("mmap", name));
  const auto* header = static_cast<const Header*>(base);
  const bool ready = header->magic == kMagic;
  std::atomic_thread_fence(std::memory_order_acquire);  // pairs with create()'s release
  if (!ready || header->size != size ||
      segment_bytes(size, header->slot_bytes) != bytes) {
    munmap(base, bytes);
    return unavailable("'" + name + "' is not a kiln shared-memory group of " + std::to_string(size) + " ranks");
  }
  return std::unique_ptr<SharedMemoryGroup>(new SharedMemoryGroup(base, bytes, rank, size, header->slot_bytes));
}

Status SharedMemoryGroup::unlink(const std::string& name) {
  if (shm_unlink(name.c_str()) != 0) return unavailable(errno_text("shm_unlink", name));
  return Status();
}

SharedMemoryGroup::SharedMemoryGroup(void* base, size_t bytes, int rank, int size, size_t slot_bytes)
    : base_(static_cast<char*>(base)),
      bytes_(bytes),
      rank_(rank),
      size_(size),
      slot_bytes_(slot_bytes),
      spin_(static_cast<unsigned>(size) <= std::max(1u, std::thread::hardware_concurrency())) {
  control(rank).pid = static_cast<int32_t>(getpid());
}

SharedMemoryGroup::~SharedMemoryGroup() { munmap(base_, bytes_); }

SharedMemoryGroup::Header& SharedMemoryGroup::header() const { return *reinterpret_cast<Header*>(base_); }

SharedMemoryGroup::RankControl& SharedMemoryGroup::control(int rank) const {
  return *reinterpret_cast<RankControl*>(base_ + control_offset() + rank * sizeof(RankControl));
}

int SharedMemoryGroup::begin_round() { return static_cast<int>(rounds_++ % 2); }

char* SharedMemoryGroup::slot(int buffer, int rank) const {
  return base_ + data_offset(size_) + (static_cast<size_t>(buffer) * (size_ + 1) + rank) * slot_bytes_;
}

char* SharedMemoryGroup::result(int buffer) const { return slot(buffer, size_); }

void SharedMemoryGroup::publish(int buffer, const Descriptor& descriptor) {
  control(rank_).descriptors[buffer] = descriptor;
}

const SharedMemoryGroup::Descriptor& SharedMemoryGroup::descriptor(int buffer, int rank) const {
  return control(rank).descriptors[buffer];
}

Status SharedMemoryGroup::barrier(Clock::time_point deadline) {
  if (!failure_.ok()) {
    return failed_precondition("an earlier collective on this group failed, so its ranks are out of step (" +
                               failure_.message() + ")");
  }
  const uint32_t target = ++barriers_;
  RankControl& own = control(rank_);
  own.arrived.store(target, std::memory_order_seq_cst);
  if (header().sleepers.load(std::memory_order_seq_cst) > 0) futex_wake_all(&own.arrived);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    Status status = wait_for(peer, target, deadline);
    if (!status.ok()) {
      failure_ = status;
      return status;
    }
  }
  return Status();
}

Status SharedMemoryGroup::wait_for(int rank, uint32_t target, Clock::time_point deadline) {
  std::atomic<uint32_t>& arrived = control(rank).arrived;
  if (reached(arrived.load(std::memory_order_acquire), target)) return Status();
  if (spin_) {
    const Clock::time_point until = Clock::now() + kSpin;
    do {
      for (int i = 0; i < 64; ++i) {
        if (reached(arrived.load(std::memory_order_acquire), target)) return Status();
        cpu_relax();
      }
    } while (Clock::now() < until);
  }
  std::atomic<uint32_t>& sleepers = header().sleepers;
  while (true) {
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return missing_ranks(target, "timed out waiting for");
    if (process_exited(control(rank).pid)) return missing_ranks(target, "gave up waiting for");
    // Announce the sleep before the last look, so a rank arriving after
    // that look sees a sleeper and wakes it (the futex call rechecks too).
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = arrived.load(std::memory_order_seq_cst);
    if (!reached(seen, target)) {
      futex_wait(&arrived, seen, std::min<std::chrono::nanoseconds>(deadline - now, kSleepSlice));
    }
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (reached(arrived.load(std::memory_order_acquire), target)) return Status();
  }
}

Status SharedMemoryGroup::missing_ranks(uint32_t target, const char* what) const {
  std::string missing;
  bool exited = false;
  for (int rank = 0; rank < size_; ++rank) {
    if (rank == rank_ || reached(control(rank).arrived.load(std::memory_order_acquire), target)) continue;
    const bool gone = process_exited(control(rank).pid);
    exited = exited || gone;
    missing += (missing.empty() ? "rank " : ", rank ") + std::to_string(rank) +
               (gone ? " (process " + std::to_string(control(rank).pid) + " exited)" : "");
  }
  std::string message = std::string(what) + " " + missing + " at barrier " + std::to_string(target) +
                        " of the shared-memory transport";
  return exited ? unavailable(message) : deadline_exceeded(message);
}

}  // namespace kiln
