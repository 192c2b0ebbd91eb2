// Custom kernels: a user's C function against Kiln's kernel ABI
// (compiler/kernel_abi.h), compiled and cached by Kiln's toolchain like its own
// kernels, and launched on the current stream like them. torch_kiln.kernels
// (python/torch_kiln/kernels.py) is the Python face; docs/guides/custom_kernels.md
// the guide.
//
// A custom kernel's source is wrapped in the C prelude of generated kernels
// (half-type conversions, Philox) and a few macros of its own (KILN_KERNEL,
// KILN_DATA, ...: custom_prelude() below), with a #line directive so the
// compiler's diagnostics name the user's file and line. Its disk-cache key is
// that whole text with the compiler's identity, as for every kernel.
//
// Ownership and lifetime: a loaded kernel is kept in a process-wide table and
// never unloaded (as every kernel); a handle indexes that table.
// Threads: any host thread may load and launch; the kernel cache makes a source
// two threads load at once compile once.
// Errors: a compile failure raises a RuntimeError naming the kernel, where its
// source was saved and the compiler's diagnostics (which name the user's file
// and line). A launch checks its operands before queuing anything: every
// tensor on the kiln device and strided, every operand broadcastable to the
// launch shape (an output of shape [rows, 1] is a per-row result), at most ir::kMaxOperands tensors, ir::kMaxRank dims
// and ir::kMaxScalars scalars; each error names the kernel.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::torch_integration::custom {

// Macros a custom kernel's source may use, after the prelude of generated
// kernels. Documented in docs/guides/custom_kernels.md.
const char* custom_prelude();

// Where a kernel's source came from, for the #line directive.
struct SourceLocation {
  std::string file;  // empty: the kernel's name stands in
  int64_t line = 1;  // of the source's first line in `file`
};

// Compiles `source` (or finds it in the caches) and returns a handle for
// launch_custom_kernel. `name` names the kernel in errors, files and op
// tracking; `entry_symbol` is the function KILN_KERNEL defined.
int64_t load_custom_kernel(const std::string& name, const std::string& entry_symbol,
                           const std::string& source, const SourceLocation& location);

// The C text load_custom_kernel compiles for `source` (for tests and dumps).
std::string custom_kernel_translation_unit(const std::string& source, const SourceLocation& location);

struct CustomLaunch {
  std::vector<at::Tensor> inputs;
  std::vector<at::Tensor> outputs;
  std::vector<int64_t> shape;  // the launch shape, outermost dim first (PyTorch's order)
  std::vector<c10::Scalar> scalars;
  int64_t positions = 0;          // the kernel is called on pieces of [0, positions)
  int64_t cost_per_position = 1;  // elements each position touches, for the thread split
  bool single_threaded = false;   // call it once over [0, positions)
};

// Queues the kernel on the current stream of the outputs' device (or runs it
// at once when small and the stream idle), holding its tensors until it ran.
// Records the launch in op tracking under the kernel's name, path "custom".
void launch_custom_kernel(int64_t handle, const CustomLaunch& launch);

// The name a handle was loaded under.
const std::string& custom_kernel_name(int64_t handle);

}  // namespace kiln::torch_integration::custom
