// Op tracking: which ATen ops ran on the kiln device, and by which path.
//
// Every kernel registered for PrivateUse1 records itself here, so
// torch_kiln.get_executed_ops() accounts for every op that reached the device,
// and get_fallback_ops() lists those that ran on the CPU. Paths:
//   native    implemented by Kiln's runtime (allocation, views, copies, fill)
//   compiled  a Kiln-generated kernel
//   library   a vendor-library call (matmul, convolution, ...) on device memory
//   fallback  copied to the CPU, run there, copied back
//   custom    a user's kernel (torch_kiln.kernels), under the kernel's name
// Thread-safe. Counting costs one hashed lookup under a mutex, or for a static
// name one per-thread pointer lookup and an atomic increment.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace kiln::torch_integration {

enum class OpPath { kNative = 0, kCompiled = 1, kLibrary = 2, kFallback = 3, kCustom = 4 };
constexpr int kOpPathCount = 5;

const char* op_path_name(OpPath path);

// Counts one execution of `op_name` (e.g. "aten::add.Tensor") by `path`.
// Returns true the first time this op is recorded for this path.
bool record_op(std::string_view op_name, OpPath path);
// The same for a name with static storage (a string literal): the per-launch
// path of compiled kernels, which skips the lock and the hashing of the text.
bool record_static_op(const char* op_name, OpPath path);

struct OpCounts {
  int64_t by_path[kOpPathCount] = {};
};

// A copy of all counts, by op name.
std::map<std::string, OpCounts> op_counts();
void clear_op_tracking();

}  // namespace kiln::torch_integration
