#include "kiln/c10/device_guard.h"

#include <c10/util/Exception.h>

#include "kiln/base/config.h"
#include "kiln/c10/device_allocator.h"
#include "kiln/c10/status_error.h"
#include "kiln/runtime/event.h"

namespace kiln::torch_integration {

Stream& runtime_stream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "expected a kiln stream, got a stream of ", stream.device_type());
  int device = stream.device_index();
  check_device_index(device);
  Stream* found = runtime().find_stream(device, stream.id());
  TORCH_CHECK(found != nullptr, "kiln: no stream with id ", stream.id(), " on kiln:", device);
  return *found;
}

c10::Stream to_c10_stream(const Stream& stream) {
  return c10::Stream(c10::Stream::UNSAFE,
                     c10::Device(c10::DeviceType::PrivateUse1,
                                 static_cast<c10::DeviceIndex>(stream.device())),
                     stream.id());
}

Stream& current_runtime_stream(int device) {
  Runtime& kiln = runtime();
  return kiln.current_stream(device < 0 ? kiln.current_device() : device);
}

c10::Device DeviceGuardImpl::exchangeDevice(c10::Device device) const {
  c10::Device previous = getDevice();
  if (previous.index() != device.index()) setDevice(device);
  return previous;
}

c10::Device DeviceGuardImpl::getDevice() const {
  return c10::Device(c10::DeviceType::PrivateUse1,
                     static_cast<c10::DeviceIndex>(runtime().current_device()));
}

void DeviceGuardImpl::setDevice(c10::Device device) const {
  TORCH_CHECK(device.type() == c10::DeviceType::PrivateUse1, "expected a kiln device, got ",
              device);
  int index = device.has_index() ? device.index() : 0;
  check_device_index(index);
  runtime().set_current_device(index);
}

void DeviceGuardImpl::uncheckedSetDevice(c10::Device device) const noexcept {
  try {
    setDevice(device);
  } catch (...) {
    // Used by guards' destructors, which must not throw; the device stays as it was.
  }
}

c10::DeviceIndex DeviceGuardImpl::deviceCount() const noexcept {
  // Must not throw; counting does not initialize the runtime.
  return static_cast<c10::DeviceIndex>(config().num_devices());
}

c10::DeviceCapability DeviceGuardImpl::getDeviceCapability(c10::Device device) const {
  c10::DeviceCapability capability;
  // Quantized types are refused by the kiln device (see aten/dtype_policy.h).
  capability.capability_data.supported_scalar_types.has_QInt8 = 0;
  capability.capability_data.supported_scalar_types.has_QUInt8 = 0;
  capability.capability_data.supported_scalar_types.has_QInt32 = 0;
  capability.capability_data.supported_scalar_types.has_QUInt4x2 = 0;
  capability.capability_data.supported_scalar_types.has_QUInt2x4 = 0;
  return capability;
}

void DeviceGuardImpl::synchronizeDevice(c10::DeviceIndex device_index) const {
  check_status(runtime().synchronize_device(resolve_device_index(device_index)));
}

c10::Stream DeviceGuardImpl::getStream(c10::Device device) const {
  return to_c10_stream(runtime().current_stream(resolve_device_index(device.index())));
}

c10::Stream DeviceGuardImpl::getDefaultStream(c10::Device device) const {
  return to_c10_stream(runtime().default_stream(resolve_device_index(device.index())));
}

c10::Stream DeviceGuardImpl::getStreamFromGlobalPool(c10::Device device,
                                                     bool /*high_priority*/) const {
  return to_c10_stream(runtime().next_pool_stream(resolve_device_index(device.index())));
}

c10::Stream DeviceGuardImpl::getNewStream(c10::Device device, int /*priority*/) const {
  return getStreamFromGlobalPool(device, false);
}

c10::Stream DeviceGuardImpl::exchangeStream(c10::Stream stream) const {
  Stream& next = runtime_stream(stream);
  Stream& current = runtime().current_stream(next.device());
  // Held work of the stream left behind is submitted now, not when something
  // next touches that stream: its device must not sit idle meanwhile.
  if (&current != &next) current.submit_deferred();
  c10::Stream previous = to_c10_stream(current);
  runtime().set_current_stream(next);
  return previous;
}

void* DeviceGuardImpl::getStreamNativeHandle(const c10::Stream stream) const {
  return &runtime_stream(stream);
}

bool DeviceGuardImpl::queryStream(const c10::Stream& stream) const {
  return runtime_stream(stream).query();
}

void DeviceGuardImpl::synchronizeStream(const c10::Stream& stream) const {
  check_status(runtime_stream(stream).synchronize());
}

void DeviceGuardImpl::recordDataPtrOnStream(const c10::DataPtr& data,
                                            const c10::Stream& stream) const {
  record_stream_use(data, runtime_stream(stream));
}

void DeviceGuardImpl::record(void** event, const c10::Stream& stream,
                             c10::DeviceIndex device_index, c10::EventFlag flag) const {
  TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
              "kiln: event of kiln:", device_index, " cannot be recorded on a stream of kiln:",
              stream.device_index());
  Stream& target = runtime_stream(stream);
  if (*event == nullptr) {
    // torch.Event(enable_timing=True) asks for BACKEND_DEFAULT, as on CUDA.
    *event = new Event(/*enable_timing=*/flag == c10::EventFlag::BACKEND_DEFAULT);
  }
  // A user's event marks everything dispatched before it, held work included
  // (Event::record itself does not flush: the allocator records under its lock).
  target.submit_deferred();
  check_status(static_cast<Event*>(*event)->record(target));
}

void DeviceGuardImpl::block(void* event, const c10::Stream& stream) const {
  if (event == nullptr) return;  // never recorded: nothing to wait for
  Stream& target = runtime_stream(stream);
  target.submit_deferred();  // held work comes before the wait, as dispatched
  check_status(static_cast<Event*>(event)->block(target));
}

bool DeviceGuardImpl::queryEvent(void* event) const {
  return event == nullptr || static_cast<Event*>(event)->query();
}

void DeviceGuardImpl::synchronizeEvent(void* event) const {
  if (event != nullptr) static_cast<Event*>(event)->synchronize();
}

double DeviceGuardImpl::elapsedTime(void* start, void* end,
                                    c10::DeviceIndex /*device_index*/) const {
  TORCH_CHECK(start != nullptr && end != nullptr,
              "kiln: both events must be recorded before elapsed_time");
  return value_or_throw(
      static_cast<Event*>(start)->elapsed_milliseconds(*static_cast<Event*>(end)));
}

void DeviceGuardImpl::destroyEvent(void* event, c10::DeviceIndex /*device_index*/) const noexcept {
  delete static_cast<Event*>(event);
}

C10_REGISTER_GUARD_IMPL(PrivateUse1, DeviceGuardImpl);

}  // namespace kiln::torch_integration
