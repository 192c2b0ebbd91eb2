// The kiln device allocator as PyTorch sees it: a c10::DeviceAllocator over
// each device's runtime CachingAllocator, registered for PrivateUse1.
//
// allocate() serves the current device on its current stream; the returned
// DataPtr frees back to the same device's allocator. Statistics are reported
// in PyTorch's DeviceStats shape, which torch.accelerator.memory_* and
// torch.kiln.memory_stats() read.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

#include "kiln/runtime/stream.h"

namespace kiln::torch_integration {

class DeviceAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t bytes) override;
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* destination, const void* source, std::size_t count) const override;

  bool initialized() override;
  void emptyCache(c10::MempoolId_t mempool_id = {0, 0}) override;
  void recordStream(const c10::DataPtr& data, c10::Stream stream) override;
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override;
  void resetAccumulatedStats(c10::DeviceIndex device) override;
  void resetPeakStats(c10::DeviceIndex device) override;
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override;
};

DeviceAllocator& device_allocator();

// Marks device memory `data` as used on `stream` (no-op for other devices).
void record_stream_use(const c10::DataPtr& data, Stream& stream);

}  // namespace kiln::torch_integration
