// Runtime: the process-wide owner of the driver, and of each device's caching
// allocator and streams, plus the pinned host allocator.
//
// Created on first use from config() (KILN_NUM_DEVICES, KILN_DEVICE_MEMORY,
// KILN_LAUNCH_BLOCKING) and never destroyed, so exit-time frees stay valid.
// Stream workers are threads, which do not survive fork(): a child of a parent
// that initialized the runtime cannot use it, and get() says so.
//
// Streams of a device: id 0 is the default stream; ids 1..kStreamPoolSize are
// a pool handed out round-robin to new Stream objects, as CUDA does, so the
// number of worker threads stays bounded.
//
// The current device and each device's current stream are per-thread.
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/caching_allocator.h"
#include "kiln/runtime/driver.h"
#include "kiln/runtime/pinned_host_allocator.h"
#include "kiln/runtime/stream.h"

namespace kiln {

class Runtime {
 public:
  static constexpr int kStreamPoolSize = 8;
  static constexpr int kMaxDevices = 64;

  // The process-wide runtime. Fails in a forked child of an initialized parent.
  static StatusOr<Runtime*> get();
  // Whether get() has created the runtime in this process.
  static bool initialized();
  // Whether this process is a fork child of a parent that had initialized it.
  static bool in_bad_fork();

  // A private runtime over `driver` (tests use this; get() builds the global one).
  Runtime(std::unique_ptr<Driver> driver, bool launch_blocking);
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Driver& driver() { return *driver_; }
  int device_count() const { return static_cast<int>(devices_.size()); }
  // kOutOfRange naming the valid range unless 0 <= device < device_count().
  Status check_device(int device) const;

  CachingAllocator& allocator(int device) { return *devices_[device]->allocator; }
  PinnedHostAllocator& pinned_host_allocator() { return pinned_host_allocator_; }

  Stream& default_stream(int device) { return *devices_[device]->streams[0]; }
  // The next pool stream of `device`, round-robin.
  Stream& next_pool_stream(int device);
  // The stream with `id` on `device`, or nullptr.
  Stream* find_stream(int device, int64_t id);

  // Per-thread selection. The current device starts at 0, each device's
  // current stream at its default stream.
  int current_device() const;
  void set_current_device(int device);
  Stream& current_stream(int device);
  void set_current_stream(Stream& stream);

  // Whether queued work on `device` may drop its hold on the device memory
  // it uses before it runs, leaving reuse to the caching allocator's stream
  // order (docs/design/memory.md): true while no stream but the default one
  // has been handed out on the device (a block is then only ever used on the
  // stream it belongs to), unless KILN_HOLD_QUEUED_TENSORS=1.
  bool frees_in_stream_order(int device) const;

  // Waits for every stream of `device`; returns the first failure found.
  Status synchronize_device(int device);

 private:
  struct DeviceState {
    std::unique_ptr<CachingAllocator> allocator;
    std::vector<std::unique_ptr<Stream>> streams;  // [0] default, then the pool
    std::atomic<int> next_pool_index{0};
    std::atomic<bool> other_streams_used{false};  // a pool stream was handed out
  };
  void note_stream_used(int device, int64_t id);

  std::unique_ptr<Driver> driver_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
  PinnedHostAllocator pinned_host_allocator_;
};

}  // namespace kiln
