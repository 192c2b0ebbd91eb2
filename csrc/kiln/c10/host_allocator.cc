#include "kiln/c10/host_allocator.h"

#include <cstring>

#include "kiln/c10/device_guard.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration {
namespace {

void free_pinned(void* pointer) {
  StatusOr<Runtime*> kiln = Runtime::get();
  if (kiln.ok()) kiln.value()->pinned_host_allocator().free(pointer);
}

}  // namespace

c10::DataPtr HostAllocator::allocate(size_t bytes) {
  void* pointer = value_or_throw(runtime().pinned_host_allocator().allocate(bytes));
  return c10::DataPtr(pointer, pointer, &free_pinned, c10::Device(c10::DeviceType::CPU));
}

void HostAllocator::copy_data(void* destination, const void* source, std::size_t count) const {
  std::memcpy(destination, source, count);
}

bool HostAllocator::record_event(void* pointer, void* /*context*/, c10::Stream stream) {
  if (!is_pinned_pointer(pointer)) return false;
  runtime().pinned_host_allocator().record_stream(pointer, runtime_stream(stream));
  return true;
}

void HostAllocator::empty_cache() { runtime().pinned_host_allocator().empty_cache(); }

at::HostStats HostAllocator::get_stats() {
  PinnedHostStats stats = runtime().pinned_host_allocator().stats();
  at::HostStats result;
  result.allocations.current = stats.segments;
  result.allocated_bytes.current = stats.reserved_bytes;
  result.active_requests.current = stats.allocations;
  result.active_bytes.current = stats.allocated_bytes;
  return result;
}

HostAllocator& host_allocator() {
  static HostAllocator instance;
  return instance;
}

bool is_pinned_pointer(const void* pointer) {
  if (!Runtime::initialized() || Runtime::in_bad_fork()) return false;
  return runtime().pinned_host_allocator().is_pinned(pointer);
}

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &host_allocator());

}  // namespace kiln::torch_integration
