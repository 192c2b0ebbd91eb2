#include "kiln/c10/device_allocator.h"

#include <cstring>
#include <utility>

#include "kiln/c10/status_error.h"

namespace kiln::torch_integration {
namespace {

// One deleter per device index, so a DataPtr needs no heap-allocated context
// to remember where its memory came from.
template <int Device>
void free_on_device(void* pointer) {
  if (pointer == nullptr) return;
  // The runtime outlives every tensor (it is never destroyed).
  StatusOr<Runtime*> kiln = Runtime::get();
  if (kiln.ok()) kiln.value()->allocator(Device).free(pointer);
}

template <int... Devices>
constexpr std::array<c10::DeleterFnPtr, sizeof...(Devices)> make_deleters(
    std::integer_sequence<int, Devices...>) {
  return {&free_on_device<Devices>...};
}

constexpr auto kDeleters =
    make_deleters(std::make_integer_sequence<int, Runtime::kMaxDevices>());

void copy_stats(const StatArray& from, c10::CachingAllocator::StatArray& to) {
  for (size_t i = 0; i < from.size(); ++i) {
    to[i].current = from[i].current;
    to[i].peak = from[i].peak;
    to[i].allocated = from[i].allocated;
    to[i].freed = from[i].freed;
  }
}

}  // namespace

c10::DataPtr DeviceAllocator::allocate(size_t bytes) {
  Runtime& kiln = runtime();
  int device = kiln.current_device();
  c10::Device where(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
  if (bytes == 0) return c10::DataPtr(nullptr, nullptr, kDeleters[device], where);
  void* pointer =
      value_or_throw(kiln.allocator(device).allocate(bytes, kiln.current_stream(device)));
  return c10::DataPtr(pointer, pointer, kDeleters[device], where);
}

void DeviceAllocator::copy_data(void* destination, const void* source, std::size_t count) const {
  Runtime& kiln = runtime();
  if (!Stream::running_queued_work()) kiln.current_stream(kiln.current_device()).wait_for_queued_work();
  kiln.driver().copy_device_to_device(destination, source, count);
}

bool reused_in_stream_order(const at::Tensor& tensor) {
  if (!tensor.defined()) return true;
  if (!tensor.is_privateuseone() || !tensor.has_storage()) return false;
  return storage_reused_in_stream_order(tensor.storage());
}

bool storage_reused_in_stream_order(const c10::Storage& storage) {
  const c10::DataPtr& data = storage.data_ptr();
  if (data.get() == nullptr) return true;
  const int device = data.device().index();
  if (device < 0 || device >= Runtime::kMaxDevices || data.get_deleter() != kDeleters[device]) return false;
  return runtime().frees_in_stream_order(device);
}

bool DeviceAllocator::initialized() { return Runtime::initialized(); }

void DeviceAllocator::emptyCache(c10::MempoolId_t /*mempool_id*/) {
  Runtime& kiln = runtime();
  for (int device = 0; device < kiln.device_count(); ++device) kiln.allocator(device).empty_cache();
}

void DeviceAllocator::recordStream(const c10::DataPtr& data, c10::Stream stream) {
  Stream* target = runtime().find_stream(stream.device_index(), stream.id());
  if (target != nullptr) record_stream_use(data, *target);
}

c10::CachingDeviceAllocator::DeviceStats DeviceAllocator::getDeviceStats(
    c10::DeviceIndex device) {
  AllocatorStats stats = runtime().allocator(resolve_device_index(device)).stats();
  c10::CachingDeviceAllocator::DeviceStats result;
  copy_stats(stats.allocation, result.allocation);
  copy_stats(stats.segment, result.segment);
  copy_stats(stats.active, result.active);
  copy_stats(stats.allocated_bytes, result.allocated_bytes);
  copy_stats(stats.reserved_bytes, result.reserved_bytes);
  copy_stats(stats.active_bytes, result.active_bytes);
  copy_stats(stats.requested_bytes, result.requested_bytes);
  result.num_alloc_retries = stats.num_alloc_retries;
  result.num_ooms = stats.num_ooms;
  result.num_device_alloc = stats.num_device_alloc;
  result.num_device_free = stats.num_device_free;
  return result;
}

void DeviceAllocator::resetAccumulatedStats(c10::DeviceIndex device) {
  runtime().allocator(resolve_device_index(device)).reset_accumulated_stats();
}

void DeviceAllocator::resetPeakStats(c10::DeviceIndex device) {
  runtime().allocator(resolve_device_index(device)).reset_peak_stats();
}

std::pair<size_t, size_t> DeviceAllocator::getMemoryInfo(c10::DeviceIndex device) {
  CachingAllocator& allocator = runtime().allocator(resolve_device_index(device));
  return {allocator.free_device_bytes(), allocator.capacity_bytes()};
}

DeviceAllocator& device_allocator() {
  static DeviceAllocator instance;
  return instance;
}

void record_stream_use(const c10::DataPtr& data, Stream& stream) {
  if (data.device().type() != c10::DeviceType::PrivateUse1 || data.get() == nullptr) return;
  runtime().allocator(data.device().index()).record_stream(data.get(), stream);
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &device_allocator());

}  // namespace kiln::torch_integration
