// Copies between host and device and within the device.
//
// Ordering follows CUDA's rules:
//   - device to device: queued on the destination's current stream, returns at once;
//   - host to device and device to host: the host waits, unless non_blocking is
//     set and the host side is pinned memory, in which case the copy is queued
//     and the tensors it uses are kept alive until it ran.
// A same-dtype copy between two dense tensors with identical strides is one
// driver copy. Within one device anything else (dtype conversion, different
// strides, broadcast) is a compiled kernel (compiled/pointwise/copy_ops.h); across the
// host, across devices, and for dtypes compiled kernels do not cover, ATen's
// CPU copy kernel runs over aliases of the device memory, in stream order.
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/copy.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include <algorithm>

#include "kiln/aten/compiled/pointwise/copy_ops.h"
#include "kiln/aten/library/library_threads.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/native/native_kernels.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/device_guard.h"
#include "kiln/c10/host_allocator.h"
#include "kiln/c10/status_error.h"
#include "kiln/runtime/event.h"

namespace kiln::torch_integration::native {
namespace {

bool is_kiln(const at::Tensor& tensor) { return tensor.device().is_privateuseone(); }

// Whether `source` -> `destination` is a plain byte copy.
bool is_byte_copy(const at::Tensor& source, const at::Tensor& destination) {
  return source.scalar_type() == destination.scalar_type() &&
         source.sizes() == destination.sizes() && source.strides() == destination.strides() &&
         source.is_non_overlapping_and_dense() && destination.is_non_overlapping_and_dense();
}

enum class Direction { kHostToDevice, kDeviceToHost, kDeviceToDevice };

// A byte copy is split over the host's threads in blocks of kCopyBlock, at
// least kCopyGrain blocks to a thread, as ATen's CPU copy splits above 32768
// elements: one thread's memcpy moves about half what two do (bench_copies.py:
// 15 GB/s against ATen's 25 GB/s at 16 MiB on two cores). A copy the host
// waits for (on its initial thread, with its OpenMP team) splits from 512 KiB,
// as ATen's does. A queued copy runs on the stream's worker and Kiln's pool
// while the host thread goes on dispatching beside it, on one of the same
// cores: the piece that shares that core holds the copy back, and below 4 MiB
// a split queued copy ran no faster than one memcpy, or slower (1 MiB: 34-42
// GB/s against 45).
constexpr size_t kCopyBlock = size_t{64} << 10;
constexpr int64_t kCopyGrain = 4;
constexpr int64_t kMinimumSplitBlocks = 2 * kCopyGrain;
constexpr int64_t kMinimumQueuedSplitBlocks = 64;

struct ByteCopy {
  Direction direction;
  char* to;
  const char* from;
  size_t bytes;
};

void copy_bytes(Direction direction, void* to, const void* from, size_t bytes) {
  Driver& driver = runtime().driver();
  switch (direction) {
    case Direction::kHostToDevice: driver.copy_host_to_device(to, from, bytes); break;
    case Direction::kDeviceToHost: driver.copy_device_to_host(to, from, bytes); break;
    case Direction::kDeviceToDevice: driver.copy_device_to_device(to, from, bytes); break;
  }
}

void copy_blocks(void* context, int64_t begin, int64_t end) {
  const auto* copy = static_cast<const ByteCopy*>(context);
  const size_t first = static_cast<size_t>(begin) * kCopyBlock;
  const size_t last = std::min(copy->bytes, static_cast<size_t>(end) * kCopyBlock);
  copy_bytes(copy->direction, copy->to + first, copy->from + first, last - first);
}

bool overlaps(const char* to, const char* from, size_t bytes) {
  return from < to + bytes && to < from + bytes;
}

// Copies `source` into `destination`, either of which may alias device memory.
// Runs in stream order (inside queued work or run_synchronously).
Status copy_elements(const at::Tensor& source, const at::Tensor& destination,
                     Direction direction) {
  if (is_byte_copy(source, destination)) {
    ByteCopy copy{direction, static_cast<char*>(destination.data_ptr()),
                  static_cast<const char*>(source.data_ptr()), destination.nbytes()};
    const auto blocks = static_cast<int64_t>((copy.bytes + kCopyBlock - 1) / kCopyBlock);
    // Small copies (most of a model's) skip the thread checks; overlapping
    // memory (views of one storage) is one memmove, in order.
    const bool split = blocks >= kMinimumSplitBlocks && !overlaps(copy.to, copy.from, copy.bytes) &&
                       (blocks >= kMinimumQueuedSplitBlocks || library::on_initial_thread());
    if (split) {
      library::parallel_over_host_threads(blocks, kCopyGrain, &copy_blocks, &copy);
    } else {
      copy_bytes(direction, copy.to, copy.from, copy.bytes);
    }
    return Status();
  }
  at::Tensor to = is_kiln(destination) ? host_alias(destination) : destination;
  at::Tensor from = is_kiln(source) ? host_alias(source) : source;
  // ATen's CPU copy runs a parallel loop: on a stream worker it must not
  // start an OpenMP team (library_threads.h); on the initial thread it may.
  library::LibraryThreadScope threads(/*small=*/false);
  to.copy_(from);
  return Status();
}

bool is_pinned(const at::Tensor& host_tensor) {
  return is_pinned_pointer(host_tensor.data_ptr());
}

void copy_within_device(const at::Tensor& source, const at::Tensor& destination) {
  Stream& destination_stream = stream_of(destination);
  if (source.device() != destination.device()) {
    // Order after the source device's queued work, and keep that device from
    // overwriting the source until the copy ran.
    Stream& source_stream = stream_of(source);
    Event source_ready;
    check_status(source_ready.record(source_stream));
    check_status(source_ready.block(destination_stream));
    check_status(destination_stream.enqueue("aten::copy_", [source, destination]() {
      return copy_elements(source, destination, Direction::kDeviceToDevice);
    }));
    Event copy_done;
    check_status(copy_done.record(destination_stream));
    check_status(copy_done.block(source_stream));
    return;
  }
  if (!is_byte_copy(source, destination) && compiled::copy_covers(source, destination)) {
    compiled::copy_on_device(source, destination);  // checks overlap as TensorIterator does
    return;
  }
  // As on the CPU: copying between partly overlapping memory is refused.
  at::assert_no_partial_overlap(destination, source);
  check_status(destination_stream.launch("aten::copy_", destination.nbytes(),
                                         [source, destination]() {
    return copy_elements(source, destination, Direction::kDeviceToDevice);
  }));
}

// A copy between the host and the device: queued when non_blocking and the
// host side is pinned, otherwise run in stream order while the host waits.
void copy_across_host(const at::Tensor& source, const at::Tensor& destination,
                      bool non_blocking) {
  bool to_device = is_kiln(destination);
  const at::Tensor& host_side = to_device ? source : destination;
  Stream& stream = stream_of(to_device ? destination : source);
  Direction direction = to_device ? Direction::kHostToDevice : Direction::kDeviceToHost;
  if (non_blocking && is_pinned(host_side)) {
    check_status(stream.enqueue("aten::copy_", [source, destination, direction]() {
      return copy_elements(source, destination, direction);
    }));
    return;
  }
  check_status(stream.run_synchronously("aten::copy_", [&]() {
    return copy_elements(source, destination, direction);
  }));
}

}  // namespace

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& destination, bool non_blocking) {
  record_static_op("aten::_copy_from", OpPath::kNative);
  TORCH_CHECK(self.defined() && destination.defined(), "kiln: copy of an undefined tensor");
  TORCH_CHECK(is_kiln(self) || is_kiln(destination), "kiln: _copy_from between ", self.device(),
              " and ", destination.device(), " does not involve a kiln tensor");
  TORCH_CHECK(is_kiln(self) || self.device().is_cpu(), "kiln: cannot copy from ", self.device(),
              " to ", destination.device(), "; move the tensor to the CPU first");
  TORCH_CHECK(is_kiln(destination) || destination.device().is_cpu(), "kiln: cannot copy from ",
              self.device(), " to ", destination.device(), "; move the tensor to the CPU first");
  if (destination.numel() == 0) return destination;
  // Normally the Conjugate and Negative keys' kernels below resolve such a
  // source first; a Python dispatch mode (AOTAutograd runs a compiled graph's
  // first call under one) can bring it here with the bit still set.
  if ((self.is_conj() || self.is_neg()) && !destination.is_conj() && !destination.is_neg()) {
    return copy_from_resolving_views(self, destination, non_blocking);
  }
  if (is_kiln(self) && is_kiln(destination)) {
    copy_within_device(self, destination);
  } else {
    copy_across_host(self, destination, non_blocking);
  }
  return destination;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& destination) {
  record_static_op("aten::_copy_from_and_resize", OpPath::kNative);
  if (destination.sizes() != self.sizes()) destination.resize_(self.sizes());
  return copy_from(self, destination, /*non_blocking=*/false);
}

// Copies whose source is a lazily conjugated or negated view (conj() of a
// complex tensor, the views of the Conjugate and Negative keys). ATen's
// generic fallback for those keys materializes the source with clone(), which
// copies from the same view through _copy_from again, without end. These
// kernels, registered for the two keys, resolve the view on the CPU instead:
// kiln computes no complex math, and the CPU has conj_physical and neg.
namespace {

at::Tensor resolved_on_host(const at::Tensor& source) {
  at::Tensor raw = source;
  if (raw.is_conj()) raw = raw.conj();        // the same memory, without the conj bit
  if (raw.is_neg()) raw = raw._neg_view();    // the same memory, without the neg bit
  at::Tensor host = at::empty(raw.sizes(), raw.options().device(c10::kCPU));
  host.copy_(raw);
  if (source.is_neg()) host.neg_();
  if (source.is_conj()) host.conj_physical_();
  return host;
}

}  // namespace

at::Tensor copy_from_resolving_views(const at::Tensor& self, const at::Tensor& destination,
                                     bool non_blocking) {
  TORCH_CHECK(!destination.is_conj() && !destination.is_neg(),
              "kiln: copying into a conjugated or negated view is not supported; "
              "copy into a tensor and call conj() on it");
  at::Tensor host = self.device().is_cpu() ? self.resolve_conj().resolve_neg() : resolved_on_host(self);
  if (destination.device().is_cpu()) {
    destination.copy_(host);
    return destination;
  }
  return copy_from(host, destination, non_blocking);
}

at::Tensor copy_from_and_resize_resolving_views(const at::Tensor& self,
                                                const at::Tensor& destination) {
  if (destination.sizes() != self.sizes()) destination.resize_(self.sizes());
  return copy_from_resolving_views(self, destination, /*non_blocking=*/false);
}

}  // namespace kiln::torch_integration::native
