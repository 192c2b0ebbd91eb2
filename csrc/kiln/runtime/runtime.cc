#include "kiln/runtime/runtime.h"

#include <pthread.h>

#include <array>
#include <mutex>

#include "kiln/base/config.h"
#include "kiln/base/logging.h"
#include "kiln/runtime/host_driver.h"

namespace kiln {
namespace {

std::atomic<bool> global_initialized{false};
std::atomic<bool> bad_fork{false};

void mark_fork_child() {
  if (global_initialized.load()) bad_fork.store(true);
}

// Per-thread selection. Stream ids rather than pointers: 0 means default.
thread_local int current_device_index = 0;
thread_local std::array<int64_t, Runtime::kMaxDevices> current_stream_ids{};

}  // namespace

StatusOr<Runtime*> Runtime::get() {
  if (bad_fork.load()) {
    return failed_precondition(
        "Cannot re-initialize kiln in forked subprocess. The parent process used the kiln "
        "device before fork(); use the 'spawn' start method for multiprocessing");
  }
  static Runtime* runtime = [] {
    const Config& settings = config();
    auto* created = new Runtime(
        std::make_unique<HostDriver>(settings.num_devices(), settings.device_memory_bytes()),
        settings.launch_blocking());
    pthread_atfork(nullptr, nullptr, &mark_fork_child);
    global_initialized.store(true);
    KILN_LOG(kInfo, "runtime started: " + std::to_string(created->device_count()) +
                        " device(s) of " + std::to_string(settings.device_memory_bytes() >> 20) +
                        " MiB, launch blocking " + (settings.launch_blocking() ? "on" : "off"));
    return created;
  }();
  return runtime;
}

bool Runtime::initialized() { return global_initialized.load(); }

bool Runtime::in_bad_fork() { return bad_fork.load(); }

Runtime::Runtime(std::unique_ptr<Driver> driver, bool launch_blocking)
    : driver_(std::move(driver)) {
  int count = std::min(driver_->device_count(), kMaxDevices);
  for (int device = 0; device < count; ++device) {
    auto state = std::make_unique<DeviceState>();
    state->allocator = std::make_unique<CachingAllocator>(*driver_, device);
    for (int id = 0; id <= kStreamPoolSize; ++id) {
      state->streams.push_back(std::make_unique<Stream>(device, id, launch_blocking));
    }
    devices_.push_back(std::move(state));
  }
}

Status Runtime::check_device(int device) const {
  if (device >= 0 && device < device_count()) return Status();
  if (device_count() == 0) {
    return out_of_range("kiln device index " + std::to_string(device) +
                        " is invalid: no kiln devices (KILN_NUM_DEVICES=0)");
  }
  return out_of_range("kiln device index " + std::to_string(device) +
                      " is out of range: there are " + std::to_string(device_count()) +
                      " kiln device(s), valid indices are 0.." +
                      std::to_string(device_count() - 1));
}

void Runtime::note_stream_used(int device, int64_t id) {
  std::atomic<bool>& used = devices_[device]->other_streams_used;
  if (id != 0 && !used.load(std::memory_order_relaxed)) used.store(true, std::memory_order_release);
}

bool Runtime::frees_in_stream_order(int device) const {
  return !config().hold_queued_tensors() &&
         !devices_[device]->other_streams_used.load(std::memory_order_acquire);
}

Stream& Runtime::next_pool_stream(int device) {
  DeviceState& state = *devices_[device];
  note_stream_used(device, 1);
  // Unsigned, so the rotation stays in range when the counter wraps around.
  unsigned index = static_cast<unsigned>(state.next_pool_index.fetch_add(1)) % kStreamPoolSize;
  return *state.streams[1 + index];
}

Stream* Runtime::find_stream(int device, int64_t id) {
  if (check_device(device).ok() && id >= 0 && id <= kStreamPoolSize) {
    note_stream_used(device, id);
    return devices_[device]->streams[id].get();
  }
  return nullptr;
}

int Runtime::current_device() const { return current_device_index; }

void Runtime::set_current_device(int device) { current_device_index = device; }

Stream& Runtime::current_stream(int device) {
  return *devices_[device]->streams[current_stream_ids[device]];
}

void Runtime::set_current_stream(Stream& stream) {
  note_stream_used(stream.device(), stream.id());
  current_stream_ids[stream.device()] = stream.id();
}

Status Runtime::synchronize_device(int device) {
  Status first;
  for (auto& stream : devices_[device]->streams) {
    Status status = stream->synchronize();
    if (first.ok() && !status.ok()) first = status;
  }
  return first;
}

}  // namespace kiln
