// The pinned host allocator as PyTorch sees it: an at::HostAllocator over the
// runtime's PinnedHostAllocator, registered for PrivateUse1 so pin_memory()
// and torch.accelerator's host-memory calls work for kiln.
#pragma once

#include <ATen/core/CachingHostAllocator.h>

namespace kiln::torch_integration {

class HostAllocator final : public at::HostAllocator {
 public:
  c10::DataPtr allocate(size_t bytes) override;
  void copy_data(void* destination, const void* source, std::size_t count) const override;
  bool record_event(void* pointer, void* context, c10::Stream stream) override;
  void empty_cache() override;
  at::HostStats get_stats() override;
  void reset_accumulated_stats() override {}
  void reset_peak_stats() override {}
};

HostAllocator& host_allocator();
bool is_pinned_pointer(const void* pointer);

}  // namespace kiln::torch_integration
