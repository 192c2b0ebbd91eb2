// DeviceGuardImpl for the kiln device: how PyTorch switches devices, finds and
// switches streams, and records, waits for and times events on kiln.
//
// c10::Stream ids map one-to-one to runtime stream ids (0 is the default
// stream, 1..8 the pool). c10 event handles are owned kiln::Event objects,
// created on first record and deleted by destroyEvent.
#pragma once

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "kiln/runtime/stream.h"

namespace kiln::torch_integration {

// The runtime stream behind a c10::Stream of the kiln device.
Stream& runtime_stream(const c10::Stream& stream);
// The c10::Stream naming a runtime stream.
c10::Stream to_c10_stream(const Stream& stream);
// The current stream of `device` (current device when -1), as runtime stream.
Stream& current_runtime_stream(int device = -1);

class DeviceGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
  c10::Device exchangeDevice(c10::Device device) const override;
  c10::Device getDevice() const override;
  void setDevice(c10::Device device) const override;
  void uncheckedSetDevice(c10::Device device) const noexcept override;
  c10::DeviceIndex deviceCount() const noexcept override;
  c10::DeviceCapability getDeviceCapability(c10::Device device) const override;
  void synchronizeDevice(c10::DeviceIndex device_index) const override;

  c10::Stream getStream(c10::Device device) const override;
  c10::Stream getDefaultStream(c10::Device device) const override;
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool high_priority) const override;
  c10::Stream getNewStream(c10::Device device, int priority) const override;
  c10::Stream exchangeStream(c10::Stream stream) const override;
  void* getStreamNativeHandle(const c10::Stream stream) const override;
  bool queryStream(const c10::Stream& stream) const override;
  void synchronizeStream(const c10::Stream& stream) const override;
  bool isStreamCapturing(const c10::Stream& stream) const override { return false; }
  void recordDataPtrOnStream(const c10::DataPtr& data, const c10::Stream& stream) const override;

  void record(void** event, const c10::Stream& stream, c10::DeviceIndex device_index,
              c10::EventFlag flag) const override;
  void block(void* event, const c10::Stream& stream) const override;
  bool queryEvent(void* event) const override;
  void synchronizeEvent(void* event) const override;
  double elapsedTime(void* start, void* end, c10::DeviceIndex device_index) const override;
  void destroyEvent(void* event, c10::DeviceIndex device_index) const noexcept override;
};

}  // namespace kiln::torch_integration
