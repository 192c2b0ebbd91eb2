// The kiln device allocator as PyTorch sees it: a c10::DeviceAllocator over
// each device's runtime CachingAllocator, registered for PrivateUse1.
//
// allocate() serves the current device on its current stream; the returned
// DataPtr frees back to the same device's allocator. Statistics are reported
// in PyTorch's DeviceStats shape, which torch.accelerator.memory_* and
// torch.kiln.memory_stats() read.
//
// Part of the c10 layer (above the torch line), over runtime/caching_allocator.h.
// One instance (device_allocator()), registered for PrivateUse1 at static
// initialization; the memory itself belongs to the Runtime, which is never
// destroyed, so DataPtrs freed at process exit stay valid.
//
// Ownership: a DataPtr from allocate() owns its block. Its deleter is a plain
// function per device index (no context), callable from any thread: it
// returns the block to that device's CachingAllocator, which reuses it only
// in stream order (on its stream, or after the events record_stream asked
// for). In a forked child, where the runtime cannot be used, the deleter does
// nothing and the memory is left alone.
//
// Thread-safety: every method may be called from any thread; the caching
// allocator takes its own lock. Errors are thrown through check_status():
// torch.OutOfMemoryError when the device is full after the cache was
// emptied, RuntimeError for a bad device index or an unusable runtime.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/CachingDeviceAllocator.h>

#include <algorithm>

#include "kiln/runtime/stream.h"

namespace kiln::torch_integration {

class DeviceAllocator final : public c10::DeviceAllocator {
 public:
  // Memory for `bytes` on the calling thread's current device and stream;
  // synchronous (no device work). Zero bytes: a null DataPtr on that device.
  c10::DataPtr allocate(size_t bytes) override;
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  // Copies in the calling thread once the current stream's queued work has
  // run: it may still write `source`, or use `destination`'s block, freed
  // in stream order.
  void copy_data(void* destination, const void* source, std::size_t count) const override;

  // Whether the runtime exists; does not create it.
  bool initialized() override;
  // Returns the unused cached segments of every device; pools are ignored.
  void emptyCache(c10::MempoolId_t mempool_id = {0, 0}) override;
  // As record_stream_use(); a stream the runtime does not know is ignored.
  void recordStream(const c10::DataPtr& data, c10::Stream stream) override;
  // Statistics of one device (current device when -1); the counters are
  // read under the allocator's lock, so one call sees a consistent set.
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override;
  void resetAccumulatedStats(c10::DeviceIndex device) override;
  void resetPeakStats(c10::DeviceIndex device) override;
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override;
};

// Whether queued work that uses `tensor` may let go of it before it runs, as
// CUDA kernels hold nothing: its memory comes from this allocator, whose
// caching allocator reuses a freed block only in stream order
// (caching_allocator.h), and its device frees in stream order
// (Runtime::frees_in_stream_order). Memory then goes back to the pool when
// the host drops its last reference, not when the queue reaches the work,
// so the next op's output lands in memory still warm in the caches
// (docs/design/memory.md). Undefined tensors need no hold either.
bool reused_in_stream_order(const at::Tensor& tensor);
// The same for the storage of a kiln tensor (what adaptive eager holds).
bool storage_reused_in_stream_order(const c10::Storage& storage);

// Removes from `tensors` those reused_in_stream_order; what is left (CPU
// tensors, memory from elsewhere, and all of them on a device that has used
// other streams) is what queued work must hold until it ran.
template <typename Tensors>
void drop_tensors_reused_in_stream_order(Tensors& tensors) {
  tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                               [](const at::Tensor& tensor) { return reused_in_stream_order(tensor); }),
                tensors.end());
}

// The process-wide instance (a function-local static; it holds no state).
DeviceAllocator& device_allocator();

// Marks device memory `data` as used on `stream` (no-op for other devices and
// null data): when `data` is freed, its block is not reused before the work
// queued on `stream` up to that free has run. Returns at once.
void record_stream_use(const c10::DataPtr& data, Stream& stream);

}  // namespace kiln::torch_integration
