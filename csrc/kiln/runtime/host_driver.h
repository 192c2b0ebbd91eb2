// HostDriver: device memory is anonymous host memory mapped by the runtime.
//
// Each logical device has a fixed capacity (KILN_DEVICE_MEMORY); a segment
// request past it fails with kOutOfMemory even if the host has more memory, so
// out-of-memory behaves as it does on a real accelerator. Segments come from
// mmap, so they are page-aligned and given back to the OS on free.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "kiln/runtime/driver.h"

namespace kiln {

class HostDriver final : public Driver {
 public:
  HostDriver(int device_count, uint64_t capacity_per_device);

  int device_count() const override { return static_cast<int>(reserved_.size()); }
  DeviceProperties properties(int device) const override;
  StatusOr<void*> allocate_segment(int device, size_t bytes) override;
  void free_segment(int device, void* pointer, size_t bytes) override;
  uint64_t reserved_bytes(int device) const override;
  void copy_host_to_device(void* device_destination, const void* host_source,
                           size_t bytes) override;
  void copy_device_to_host(void* host_destination, const void* device_source,
                           size_t bytes) override;
  void copy_device_to_device(void* destination, const void* source, size_t bytes) override;
  bool host_addressable() const override { return true; }

 private:
  uint64_t capacity_;
  std::vector<std::unique_ptr<std::atomic<uint64_t>>> reserved_;
};

}  // namespace kiln
