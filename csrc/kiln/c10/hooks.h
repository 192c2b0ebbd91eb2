// PrivateUse1 hooks: how ATen asks the kiln device about itself (availability,
// devices, generators, pinned memory, pointers, storage resize).
//
// Part of the c10 layer (above the torch line): thin answers from the Runtime,
// the allocators (device_allocator.h, host_allocator.h) and the generators
// (generator.h). One Hooks object is registered with ATen at static
// initialization and never freed (ATen keeps it for the process).
//
// Thread-safety: every method may be called from any thread; the current
// device is per-thread. Errors are c10::Error (RuntimeError) from TORCH_CHECK
// or check_status(). isBuilt(), isAvailable(), deviceCount(),
// hasPrimaryContext() (true once the runtime exists), isPinnedPtr() and
// getPinnedMemoryAllocator() never create the runtime; isAvailable() and
// deviceCount() read the configuration, as CUDA's do without a context. The
// other methods create it if needed, and throw in a forked child of a parent
// that used it.
#pragma once

#include <ATen/detail/PrivateUse1HooksInterface.h>

namespace kiln::torch_integration {

class Hooks final : public at::PrivateUse1HooksInterface {
 public:
  // Creates the runtime (throws if it cannot be used).
  void init() const override;
  bool isBuilt() const override { return true; }
  bool isAvailable() const override;
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override;
  c10::DeviceIndex deviceCount() const override;
  void setCurrentDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex getCurrentDevice() const override;
  // Returns the previous device; a negative `device` changes nothing.
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override;
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override;
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override;
  // The kiln device whose memory holds `data`; throws if none does.
  at::Device getDeviceFromPtr(void* data) const override;
  bool isPinnedPtr(const void* data) const override;
  at::Allocator* getPinnedMemoryAllocator() const override;
  // Synchronous: allocates `new_bytes` on the storage's device (on the
  // calling thread's current stream there), copies the kept bytes in stream
  // order while the caller waits (Stream::run_synchronously), then swaps the
  // DataPtr in; the old block is freed back to its allocator. Throws
  // (leaving the storage as it was) for a storage that is not resizable, out
  // of memory, or a failure pending on that stream. When the allocation
  // throws, the calling thread's current device is left switched to the
  // storage's (the device is not restored on that path).
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override;
};

}  // namespace kiln::torch_integration
