#include "kiln/c10/hooks.h"

#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include "kiln/base/config.h"
#include "kiln/c10/device_allocator.h"
#include "kiln/c10/device_guard.h"
#include "kiln/c10/generator.h"
#include "kiln/c10/host_allocator.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration {

void Hooks::init() const { runtime(); }

bool Hooks::isAvailable() const {
  return config().num_devices() > 0 && !Runtime::in_bad_fork();
}

bool Hooks::hasPrimaryContext(c10::DeviceIndex device_index) const {
  // A device is ready as soon as the runtime exists: there is no per-device context.
  return Runtime::initialized() && device_index >= 0 && device_index < deviceCount();
}

// Counting devices does not initialize the runtime, as on CUDA.
c10::DeviceIndex Hooks::deviceCount() const {
  return static_cast<c10::DeviceIndex>(config().num_devices());
}

void Hooks::setCurrentDevice(c10::DeviceIndex device) const {
  check_device_index(device);
  runtime().set_current_device(device);
}

c10::DeviceIndex Hooks::getCurrentDevice() const {
  return static_cast<c10::DeviceIndex>(runtime().current_device());
}

c10::DeviceIndex Hooks::exchangeDevice(c10::DeviceIndex device) const {
  c10::DeviceIndex previous = getCurrentDevice();
  if (device >= 0 && device != previous) setCurrentDevice(device);
  return previous;
}

c10::DeviceIndex Hooks::maybeExchangeDevice(c10::DeviceIndex device) const {
  return exchangeDevice(device);
}

const at::Generator& Hooks::getDefaultGenerator(c10::DeviceIndex device_index) const {
  return default_generator(device_index);
}

at::Generator Hooks::getNewGenerator(c10::DeviceIndex device_index) const {
  return new_generator(device_index);
}

at::Device Hooks::getDeviceFromPtr(void* data) const {
  Runtime& kiln = runtime();
  for (int device = 0; device < kiln.device_count(); ++device) {
    if (kiln.allocator(device).contains(data)) {
      return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
    }
  }
  TORCH_CHECK(false, "kiln: pointer ", data, " is not in the memory of any kiln device");
}

bool Hooks::isPinnedPtr(const void* data) const { return is_pinned_pointer(data); }

at::Allocator* Hooks::getPinnedMemoryAllocator() const { return &host_allocator(); }

void Hooks::resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const {
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  TORCH_CHECK(impl->resizable(), "kiln: trying to resize storage that is not resizable");
  size_t old_bytes = impl->nbytes();
  if (old_bytes == new_bytes) return;
  c10::Device device = impl->data_ptr().device();
  c10::DataPtr replacement;
  {
    c10::impl::VirtualGuardImpl guard_impl(c10::DeviceType::PrivateUse1);
    c10::Device previous = guard_impl.exchangeDevice(device);
    replacement = device_allocator().allocate(new_bytes);
    guard_impl.uncheckedSetDevice(previous);
  }
  size_t keep = std::min(old_bytes, new_bytes);
  if (keep > 0 && impl->data_ptr().get() != nullptr) {
    // Copy in stream order: earlier queued work may still be writing the old bytes.
    void* destination = replacement.get();
    const void* source = impl->data_ptr().get();
    Stream& stream = current_runtime_stream(device.index());
    check_status(stream.run_synchronously("kiln::resize_storage", [&]() {
      runtime().driver().copy_device_to_device(destination, source, keep);
      return Status();
    }));
  }
  impl->set_data_ptr_noswap(std::move(replacement));
  impl->set_nbytes(new_bytes);
}

static bool registered = [] {
  at::RegisterPrivateUse1HooksInterface(new Hooks());
  return true;
}();

}  // namespace kiln::torch_integration
