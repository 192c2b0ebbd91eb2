// Adaptive eager: pointwise ops fused while the host runs ahead of the device.
//
// Eager ops still dispatch one at a time. When a pointwise op's launch finds
// its stream busy (work queued or running: the host is ahead of the device),
// the launch is held in the stream's open region (held_region.h) instead of
// queued. Later pointwise ops over the same index space join the region; when
// anything else reaches the stream (another kind of op, a copy to the host,
// synchronize, an event, a query, a stream switch), or the next op cannot
// join, or the stream runs dry, the region is submitted as one fused kernel,
// computing the same bits as the ops one by one. The state machine of a
// stream's queue, the bit-for-bit argument and the figures are in
// docs/design/adaptive_eager.md.
//
// Never slower than without it: an op is held only while the device has other
// work, a region opens only at an op large enough (256 KiB) that its kernel
// outlasts its dispatch, a region seen for the first time runs unfused while
// its kernel compiles on a background thread (fused_region_cache.h), and its
// key ignores sizes and scalar values, so a training loop stops compiling
// after its first steps.
//
// Off with KILN_ADAPTIVE_EAGER=0, torch_kiln.set_adaptive_eager(False), or
// torch.use_deterministic_algorithms(True) (fusion keeps the results, but
// the switch promises one kernel per op). Inside a LaunchRecording (foreach
// ops, compiled programs), on a stream held inline, and with
// KILN_LAUNCH_BLOCKING=1, ops are never held.
//
// Thread-safety: every function may be called from any thread; each stream's
// region has its own lock.
#pragma once

#include <ATen/TensorIterator.h>
#include <c10/util/FunctionRef.h>

#include <atomic>
#include <cstdint>
#include <string_view>

#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/base/config.h"
#include "kiln/runtime/stream.h"

namespace kiln::torch_integration::adaptive {

// The mode in force (initially KILN_ADAPTIVE_EAGER's).
AdaptiveEagerMode mode();
// Changes the mode; switching off submits nothing by itself (held work goes
// out at the stream's next submission, as always).
void set_mode(AdaptiveEagerMode mode);

struct Stats {
  uint64_t ops_held = 0;          // launches held in a region
  uint64_t regions_fused = 0;     // regions run as one fused kernel
  uint64_t ops_fused = 0;         // ops in those regions
  uint64_t regions_unfused = 0;   // regions of 2+ ops run op by op (kernel compiling, or failed)
  uint64_t single_ops = 0;        // regions of one op (nothing to fuse)
  uint64_t reductions_fused = 0;  // reductions run with their region's ops as prologue
  uint64_t row_kernels_fused = 0;  // of those, run as a row kernel with row ops after
  uint64_t bytes_not_stored = 0;  // stores fused kernels skipped: intermediates nobody held
  // From the fused-region cache (fused_region_cache.h).
  uint64_t region_keys = 0;
  uint64_t kernels_compiled = 0;
  uint64_t compile_failures = 0;
  uint64_t compiles_pending = 0;
};
Stats stats();
// Zeroes the counters and forgets the region keys (their kernels stay loaded,
// so a key seen again finds its kernel in the kernel cache at once).
void reset();

// Tests compile fused kernels in the caller, and wait for background
// compiles, through fused_region_cache.h.

bool hold_pointwise_slow(Stream& stream, const char* op_name, std::string_view signature, KernelEntry entry,
                         const LaunchArgs& args, const compiled::LaunchShape& shape, int rank,
                         const at::TensorIteratorBase& iter, c10::function_ref<ir::Kernel()> build_ir);

bool hold_reduction_slow(Stream& stream, const char* op_name, std::string_view signature, KernelEntry entry,
                         const LaunchArgs& args, const compiled::LaunchShape& shape, int rank, int input_count,
                         c10::ArrayRef<at::Tensor> operands, c10::function_ref<ir::Kernel()> build_ir);

namespace detail {
extern std::atomic<int> current_mode;
}  // namespace detail

// launch_pointwise's hook: holds the launch of `entry` with `args` and
// `shape` over `iter` when adaptive eager applies, and returns true (the op
// is dispatched; its work will run with the region). Returns false when the
// caller must launch as usual. `build_ir` makes the op's kernel IR; it runs
// once per signature and process.
template <typename BuildIr>
bool hold_pointwise(Stream& stream, const char* op_name, std::string_view signature, KernelEntry entry,
                    const LaunchArgs& args, const compiled::LaunchShape& shape, int rank,
                    const at::TensorIteratorBase& iter, BuildIr&& build_ir) {
  if (detail::current_mode.load(std::memory_order_relaxed) == static_cast<int>(AdaptiveEagerMode::kOff)) {
    return false;
  }
  return hold_pointwise_slow(stream, op_name, signature, entry, args, shape, rank, iter, build_ir);
}

// launch_reduction's hook: holds the launch of reduction kernel `entry`
// (laid out as `args` over `rank` dims; `operands` are its inputs, the first
// `input_count`, then its outputs) behind the stream's open region when it
// reads what the region's ops wrote, so that the ops can run inside the
// reduction as its prologue (held_region.h, HeldReduction). Returns true when
// held; false when the caller must launch as usual. Never opens a region (a
// reduction right after unheld ops marks where they began, UnheldSpan).
template <typename BuildIr>
bool hold_reduction(Stream& stream, const char* op_name, std::string_view signature, KernelEntry entry,
                    const LaunchArgs& args, const compiled::LaunchShape& shape, int rank, int input_count,
                    c10::ArrayRef<at::Tensor> operands, BuildIr&& build_ir) {
  if (detail::current_mode.load(std::memory_order_relaxed) == static_cast<int>(AdaptiveEagerMode::kOff)) {
    return false;
  }
  return hold_reduction_slow(stream, op_name, signature, entry, args, shape, rank, input_count, operands, build_ir);
}

}  // namespace kiln::torch_integration::adaptive
