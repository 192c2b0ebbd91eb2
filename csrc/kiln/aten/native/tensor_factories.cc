// empty and empty_strided: the only ways ATen creates kiln storage.
#include <ATen/EmptyTensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/DefaultDtype.h>

#include "kiln/aten/dtype_policy.h"
#include "kiln/aten/native/native_kernels.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/device_allocator.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration::native {
namespace {

constexpr c10::DispatchKeySet kKilnKeys{c10::DispatchKey::PrivateUse1};

c10::Device resolve_device(std::optional<c10::Device> device) {
  int index = resolve_device_index(device.has_value() ? device->index() : -1);
  return c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index));
}

void check_options(std::optional<c10::Layout> layout, std::optional<bool> pin_memory) {
  TORCH_CHECK_NOT_IMPLEMENTED(layout.value_or(c10::kStrided) == c10::kStrided,
                              "kiln supports only strided tensors, got layout ", *layout);
  TORCH_CHECK(!pin_memory.value_or(false), "Only dense CPU tensors can be pinned");
}

c10::ScalarType resolve_dtype(std::optional<c10::ScalarType> dtype) {
  return device_dtype(dtype.value_or(c10::get_default_dtype_as_scalartype()));
}

}  // namespace

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout,
                               std::optional<c10::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format) {
  record_static_op("aten::empty.memory_format", OpPath::kNative);
  check_options(layout, pin_memory);
  // The allocator allocates on the current device; switch only when needed
  // (a device guard costs more than the rest of a small allocation).
  c10::OptionalDeviceGuard guard;
  c10::Device target = resolve_device(device);
  if (target.index() != runtime().current_device()) guard.reset_device(target);
  return at::detail::empty_generic(size, &device_allocator(), kKilnKeys, resolve_dtype(dtype),
                                   memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  record_static_op("aten::empty_strided", OpPath::kNative);
  check_options(layout, pin_memory);
  c10::OptionalDeviceGuard guard;
  c10::Device target = resolve_device(device);
  if (target.index() != runtime().current_device()) guard.reset_device(target);
  return at::detail::empty_strided_generic(size, stride, &device_allocator(), kKilnKeys,
                                           resolve_dtype(dtype));
}

}  // namespace kiln::torch_integration::native
