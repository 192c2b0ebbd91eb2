// PrivateUse1 hooks: how ATen asks the kiln device about itself (availability,
// devices, generators, pinned memory, pointers, storage resize).
#pragma once

#include <ATen/detail/PrivateUse1HooksInterface.h>

namespace kiln::torch_integration {

class Hooks final : public at::PrivateUse1HooksInterface {
 public:
  void init() const override;
  bool isBuilt() const override { return true; }
  bool isAvailable() const override;
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override;
  c10::DeviceIndex deviceCount() const override;
  void setCurrentDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex getCurrentDevice() const override;
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override;
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override;
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override;
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override;
  at::Device getDeviceFromPtr(void* data) const override;
  bool isPinnedPtr(const void* data) const override;
  at::Allocator* getPinnedMemoryAllocator() const override;
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override;
};

}  // namespace kiln::torch_integration
