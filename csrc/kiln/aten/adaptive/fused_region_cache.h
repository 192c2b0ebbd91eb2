// FusedRegionCache: the fused kernel of each region key (held_region.h), and
// the background thread that compiles them.
//
// A key seen for the first time has its kernel's IR built by the caller (it
// is cheap) and queued for the compile thread; the region then runs unfused,
// as it would without adaptive eager, so a first sight never waits for the C
// compiler. Later regions of that key find the kernel once it is ready. A
// compile that fails marks its key: its regions run unfused from then on, and
// the failure is counted, not raised (the ops' own kernels are correct).
// Compiles go through the kernel cache (kernel_launch.h), so the next process
// loads the object from disk instead of compiling it.
//
// The compile thread runs at a lower priority (nice 10, inherited by the C
// compiler it starts), so compiles take idle cores before the model's own
// work. The process waits at exit for the compile in progress, not for the
// ones queued behind it.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "kiln/compiler/kernel_abi.h"
#include "kiln/ir/kernel.h"

namespace kiln::torch_integration::adaptive {

struct FusedRegionCacheStats {
  uint64_t keys = 0;               // keys seen
  uint64_t kernels_compiled = 0;   // fused kernels ready (compiled, or loaded from disk)
  uint64_t compile_failures = 0;
  uint64_t compiles_pending = 0;   // queued or compiling now
};

// The kernel of `key` if it is ready, else nullptr; the first call for a key
// queues its compile with the IR `build` makes.
KernelEntry fused_kernel_for(const std::string& key, const std::function<ir::Kernel()>& build);
// The kernel of `key` if it is ready, else nullptr; never queues a compile.
KernelEntry fused_kernel_if_ready(const std::string& key);

// Tests: compile in the caller, so the first sight of a key already runs
// fused; and (adaptive_eager.cc) the stream's worker leaves held work to the
// host, so where a region ends does not depend on how fast the host is.
void set_synchronous_compiles(bool synchronous);
bool synchronous_compiles();
// Waits until no compile is queued or running.
void wait_for_compiles();

FusedRegionCacheStats fused_region_cache_stats();
// Forgets every key (the kernels stay loaded): tests, and reset_stats().
void clear_fused_region_cache();

}  // namespace kiln::torch_integration::adaptive
