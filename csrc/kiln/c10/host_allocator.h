// The pinned host allocator as PyTorch sees it: an at::HostAllocator over the
// runtime's PinnedHostAllocator, registered for PrivateUse1 so pin_memory()
// and torch.accelerator's host-memory calls work for kiln.
//
// Part of the c10 layer (above the torch line). One instance
// (host_allocator(), a function-local static without state), registered at
// static initialization; the memory belongs to the Runtime, never destroyed.
//
// Ownership: a DataPtr from allocate() (device CPU) owns its block; its
// deleter, callable from any thread, returns it to the PinnedHostAllocator,
// which reuses it only after the streams record_event() named have run the
// work queued on them up to the free. In a forked child the deleter does
// nothing.
//
// Thread-safety: every method may be called from any thread; the runtime's
// allocator takes its own lock. All calls are synchronous. Errors are thrown
// through check_status() (torch.OutOfMemoryError, RuntimeError).
#pragma once

#include <ATen/core/CachingHostAllocator.h>

namespace kiln::torch_integration {

class HostAllocator final : public at::HostAllocator {
 public:
  // Creates the runtime if needed. Zero bytes: a null DataPtr.
  c10::DataPtr allocate(size_t bytes) override;
  // memcpy in the calling thread, at once.
  void copy_data(void* destination, const void* source, std::size_t count) const override;
  // Marks the pinned block holding `pointer` as used on the kiln `stream`;
  // false (nothing done) for memory that is not pinned. Throws for a stream
  // that is not a known kiln stream.
  bool record_event(void* pointer, void* context, c10::Stream stream) override;
  // Unmaps the cached blocks whose streams are done with them.
  void empty_cache() override;
  // Current values only (segments, reserved and live bytes, live blocks);
  // peaks and totals stay zero, and the two resets below do nothing.
  at::HostStats get_stats() override;
  void reset_accumulated_stats() override {}
  void reset_peak_stats() override {}
};

// The process-wide instance.
HostAllocator& host_allocator();
// Whether `pointer` lies in a live or cached pinned block. False, without
// creating the runtime, when it does not exist or cannot be used (a forked
// child). Any thread.
bool is_pinned_pointer(const void* pointer);

}  // namespace kiln::torch_integration
