// Driver: the seam between Kiln's runtime and a hardware target.
//
// A driver owns device memory: it hands out raw segments up to each device's
// capacity and moves bytes between host and device. Everything above it (the
// caching allocator, streams, events, the PyTorch integration) is written
// against this interface, so a GPU or NPU target plugs in by implementing it.
// The host driver (host_driver.h) is the first target: device memory is host
// memory reserved by the runtime and kernels run on the CPU cores.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kiln/base/status.h"

namespace kiln {

struct DeviceProperties {
  std::string name;          // e.g. "Kiln host device (x86_64, 16 cores)"
  uint64_t total_memory = 0; // capacity in bytes
  int compute_units = 0;     // cores that run this device's kernels
  int capability_major = 1;  // version of the device's kernel feature set
  int capability_minor = 0;
};

class Driver {
 public:
  virtual ~Driver() = default;

  virtual int device_count() const = 0;
  // Requires 0 <= device < device_count().
  virtual DeviceProperties properties(int device) const = 0;

  // Reserves `bytes` (> 0) of memory on `device`, aligned to at least 64 bytes.
  // Fails with kOutOfMemory when the device's capacity would be exceeded or the
  // backing memory cannot be obtained.
  virtual StatusOr<void*> allocate_segment(int device, size_t bytes) = 0;
  // Returns a segment obtained from allocate_segment with the same size.
  virtual void free_segment(int device, void* pointer, size_t bytes) = 0;
  // Bytes currently reserved from this device by allocate_segment.
  virtual uint64_t reserved_bytes(int device) const = 0;

  // Byte copies. They run synchronously in the calling thread; the runtime
  // makes them asynchronous by calling them from a stream's worker.
  virtual void copy_host_to_device(void* device_destination, const void* host_source,
                                   size_t bytes) = 0;
  virtual void copy_device_to_host(void* host_destination, const void* device_source,
                                   size_t bytes) = 0;
  virtual void copy_device_to_device(void* destination, const void* source, size_t bytes) = 0;

  // Whether device memory can be read and written directly by host code (true
  // for the host target). Library kernels rely on it.
  virtual bool host_addressable() const = 0;
};

}  // namespace kiln
