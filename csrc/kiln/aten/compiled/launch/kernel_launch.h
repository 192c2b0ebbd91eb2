// The eager path's last two steps, shared by every compiled op: find the
// kernel for a signature (memory, disk, or build and compile), then launch it
// on the current stream, split over threads when the work is large. The rest
// of compiled/launch/ builds on this header: elementwise.h and pointwise.h
// (TensorIterator ops), reduction.h, row_kernel.h (one row per position),
// indexed_kernel.h (gathers and scatters), coordinate_launch.h (factories),
// structured_*.h (ATen's meta functions), dtype_sets.h (the dtypes of ATen's
// dispatch macros), pointwise_support.h (scalar conversion), index_checks.h
// (errors found in device data).
//
// Ownership and lifetime:
//   - A KernelEntry is a plain function pointer into a shared object the
//     process-wide KernelCache loaded; objects are never unloaded, so an entry
//     stays valid until the process exits and may be copied freely.
//   - LaunchArgs are copied into the queued work: the caller's copy may die as
//     soon as launch_kernel returns. Their data pointers are not owned: the
//     KeepAlive tensors handed to launch_kernel keep that memory allocated
//     until the kernel has run, except those whose memory the caching
//     allocator reuses in stream order (reused_in_stream_order in
//     c10/device_allocator.h), which queued work lets go of at once, as
//     a CUDA kernel holds nothing.
// Threads:
//   - Every function may be called from any host thread; the kernel cache is
//     thread-safe (kernel_cache.h), and its per-key lock makes a kernel that
//     two threads miss at once compile once. LaunchRecording is per thread.
//   - A queued kernel runs on the stream's worker thread, split over the
//     runtime's ThreadPool when large; an inline one runs in the caller.
// Sync or async: launches are asynchronous (queued in stream order) unless
//   the stream is idle and the work small, when they run in the caller before
//   returning. Nothing here waits for the device.
// Errors: a failed IR build or C compile raises a RuntimeError naming the op
//   (and leaves the cache without an entry for that signature, so the next call
//   retries); a tensor on another device raises PyTorch's device-mismatch
//   error; a kernel that fails while queued reports through the stream, raised
//   at the next synchronisation.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <functional>
#include <string_view>
#include <vector>

#include "kiln/compiler/kernel_abi.h"
#include "kiln/ir/kernel.h"
#include "kiln/runtime/stream.h"

namespace kiln::torch_integration::compiled {

// A kernel signature: op key, dtypes and layout classes of the operands, rank
// and scalar kinds, as a short string. Built without allocation.
class Signature {
 public:
  explicit Signature(std::string_view op_key) { append(op_key); }
  Signature& append(std::string_view text);
  Signature& append(char character);
  Signature& append_number(int64_t number);
  std::string_view view() const { return {buffer_, length_}; }

 private:
  char buffer_[256];
  size_t length_ = 0;
};

// The kernel for `signature` if this process has loaded it, else nullptr.
KernelEntry cached_kernel(std::string_view signature);
// Loads the kernel for `signature` from disk, or builds its IR with `build`
// and compiles it. A failed build or compile raises a RuntimeError naming
// `op_name`.
KernelEntry build_kernel(std::string_view signature, const char* op_name,
                         const std::function<ir::Kernel()>& build);

// The entry of the kernel for `signature`. `build` makes its IR and is called
// only when the kernel is in neither cache (no std::function is made on a hit).
template <typename Build>
KernelEntry kernel_for(std::string_view signature, const char* op_name, Build&& build) {
  if (KernelEntry entry = cached_kernel(signature)) return entry;
  return build_kernel(signature, op_name, std::function<ir::Kernel()>(std::forward<Build>(build)));
}

// The layout class of an operand along a kernel's innermost dim, of `size`
// elements and the operand's `stride` through it (a dim of one element is
// contiguous for every operand).
ir::Layout layout_class(int64_t stride, int64_t size);

// The kernel-signature character of a scalar launch argument's kind (f64,
// i64 or bool).
char scalar_kind_char(ir::DType dtype);

// Puts `scalars` into `args.scalars` from slot `first_slot` on, and their kinds
// into `signature`; returns their IR dtypes. Checks first that they fit the
// launch's ir::kMaxScalars slots.
c10::SmallVector<ir::DType, 4> set_scalars(const char* op_name, c10::ArrayRef<c10::Scalar> scalars,
                                           LaunchArgs& args, Signature& signature, int first_slot = 0);

// A kernel dim: its size and each operand's stride through it, in elements.
// `logical` is the tensor dim it came from (-1 when unknown or after a merge);
// a `pinned` dim is never merged (its coordinate is read by the kernel body).
struct KernelDim {
  int64_t size = 1;
  int64_t strides[ir::kMaxOperands] = {};
  int64_t logical = -1;
  bool pinned = false;
};

// Merges neighbours of `dims` (fastest first) that every one of the first
// `operands` operands steps through as through one dim, unless either is
// pinned; a merged dim has no logical dim.
void coalesce_dims(std::vector<KernelDim>& dims, int operands);

// The sizes and strides of `args` over `rank` dims and `operands` operands as
// a kernel's fixed shape, also appended to `signature` as a digest (the
// numbers would not fit): for kernels of compiled programs, whose shapes are
// static.
ir::FixedShape fix_shape(Signature& signature, const LaunchArgs& args, int rank, int operands);

// Tensors a queued launch holds until it has run, so their memory is not
// released (empty_cache) under it.
using KeepAlive = c10::SmallVector<at::Tensor, 4>;

struct LaunchShape {
  int64_t positions = 0;          // the launch covers [0, positions)
  int64_t cost_per_position = 1;  // elements touched per position (reductions: the reduced size)
  size_t bytes = 0;               // memory touched, for the inline-launch decision
  bool single_threaded = false;
  // For a single-threaded kernel: positions in different aligned blocks of
  // this many never store to the same element (a pooling backward scatters
  // only within its plane), so whole blocks may run on different threads,
  // each block in order. 0: every position may meet every other.
  int64_t independent_block = 0;
};

// The address a kernel reads or writes `tensor` at. Kernels read raw
// pointers, so a tensor on another device (a CPU out= tensor, say) is refused
// with PyTorch's device-mismatch RuntimeError, as a CUDA kernel would refuse it.
char* kernel_data(const at::Tensor& tensor, const char* op_name);

// Queues `entry` on `stream` (or runs it at once when small and the stream is
// idle). Raises a RuntimeError for a failure reported by an inline run.
void launch_kernel(Stream& stream, const char* op_name, KernelEntry entry, const LaunchArgs& args,
                   const LaunchShape& shape, KeepAlive keep_alive);

// Runs `entry` in the caller if the work is small and `stream` idle; returns
// false, running nothing, otherwise.
bool launch_kernel_inline(Stream& stream, const char* op_name, KernelEntry entry,
                          const LaunchArgs& args, const LaunchShape& shape);

// While a LaunchRecording is alive on a thread, every launch that thread
// hands over (launch_kernel, or launch_kernel_inline when it runs) is also
// noted: its kernel, arguments and shape. A compiled program records a fused
// kernel's first launch, and later runs replay it with new data pointers,
// without redoing the layout work and the kernel lookup (program.cc).
struct RecordedLaunch {
  KernelEntry entry = nullptr;
  LaunchArgs args{};
  LaunchShape shape;
};

// With Mode::kCapture the launches are only noted, not run: the op returns
// having queued nothing (a foreach op captures the launch of one tensor's op
// and replays it for every tensor, foreach_ops.h). Only for ops whose every
// piece of device work goes through launch_kernel.
class LaunchRecording {
 public:
  enum class Mode { kRecord, kCapture };
  explicit LaunchRecording(Mode mode = Mode::kRecord);
  ~LaunchRecording();
  LaunchRecording(const LaunchRecording&) = delete;
  LaunchRecording& operator=(const LaunchRecording&) = delete;
  const std::vector<RecordedLaunch>& launches() const { return launches_; }
  // Notes a launch with the recording active on this thread, if any.
  static void note(KernelEntry entry, const LaunchArgs& args, const LaunchShape& shape);
  // Whether the recording active on this thread captures (notes launches
  // without running them).
  static bool capturing();
  // Whether a recording (of either mode) is active on this thread.
  static bool active();

 private:
  LaunchRecording* previous_;
  Mode mode_;
  std::vector<RecordedLaunch> launches_;
};

// Runs `entry` over `shape` in this thread, split over threads when large:
// what a queued launch does when its turn comes.
void run_now(KernelEntry entry, const LaunchArgs& args, const LaunchShape& shape);

// Runs `work` (several launches, each by run_now: a foreach op's) as one piece
// of stream work touching `bytes`: in the caller when `stream` is idle and
// `bytes` is at most kInlineWorkBytes, else queued, holding `keep_alive`
// until it has run. The limit is above a single launch's (32 KiB): one call
// stands for many launches, and handing them to a sleeping worker cost 40-100
// us on a 2-core VM, more than running a megabyte of pointwise work.
constexpr size_t kInlineWorkBytes = size_t{1} << 20;
void launch_work(Stream& stream, const char* op_name, size_t bytes, std::function<void()> work,
                 std::vector<at::Tensor> keep_alive);

// launch_kernel, with the tensors to keep alive gathered by
// `make_keep_alive()` only when the work is queued: an inline run needs none.
template <typename MakeKeepAlive>
void launch_kernel_lazily(Stream& stream, const char* op_name, KernelEntry entry,
                          const LaunchArgs& args, const LaunchShape& shape,
                          MakeKeepAlive&& make_keep_alive) {
  if (shape.positions <= 0 || launch_kernel_inline(stream, op_name, entry, args, shape)) return;
  launch_kernel(stream, op_name, entry, args, shape, make_keep_alive());
}

}  // namespace kiln::torch_integration::compiled
