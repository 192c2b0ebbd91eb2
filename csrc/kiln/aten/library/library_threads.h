// How many host threads a library call may use.
//
// The library path runs PyTorch's CPU kernels (MKL, oneDNN, ATen's OpenMP
// loops) on the thread that runs the stream's work: the stream's worker, or the
// caller for small work on an idle stream. Each such thread has its own OpenMP
// team, beside Kiln's own thread pool. MKL splits even a 64x64 matmul across
// the team, and waking a team member that sleeps, or whose core is taken by
// another team, costs 40 to 100 microseconds: a 64x32 addmm took 45-70 us on
// kiln against 6 us on the CPU (2-core VM; docs/history/performance-log.md).
//
// A LibraryThreadScope therefore runs small calls on the calling thread alone
// (its OpenMP and MKL thread counts set to 1 for the call, thread-locally),
// and lets large calls use the team after telling Kiln's pool workers to stop
// polling, so the team has the cores.
//
// Only the process's initial thread may use a team, because that team
// already exists: PyTorch's CPU ops use it. A team started by any other
// thread (the stream's worker, the autograd engine's kiln thread) makes more
// OpenMP threads than cores, and libgomp then cuts every thread's spin-wait
// at its barriers from 300,000 to 1,000 iterations, process-wide, for as long
// as both teams exist. After one queued 3.5 MFLOP convolution, a CPU
// batch_norm of 16x16x8x8 took 208 us instead of 24 us, with six futex
// sleeps per call: Kiln slowed the user's own CPU work in the same process
// 3-8x. Large calls on other threads therefore run on that thread alone too.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::torch_integration::library {

// A small library call: below 2 MFLOP (about 20 us on one AVX-512 core) and
// 256 KiB touched. A second thread cannot win back its wake-up on such a call,
// and neither can the stream's worker: it runs on the calling thread alone,
// and at once in the caller when the stream is idle (launch_bytes).
constexpr double kSmallLibraryFlops = double{1 << 21};
constexpr uint64_t kSmallLibraryBytes = uint64_t{256} << 10;

inline bool is_small_library_call(double flops, uint64_t bytes) {
  return flops < kSmallLibraryFlops && bytes < kSmallLibraryBytes;
}

// The size to give Stream::launch, which runs work inline on an idle stream
// when it touches few bytes: a small call counts as touching none.
inline size_t launch_bytes(bool small, size_t bytes) { return small ? 0 : bytes; }

// 2*m*n*k*batches: the floating-point operations of a (batched) matmul.
double matmul_flops(int64_t batches, int64_t m, int64_t k, int64_t n);

// Whether the calling thread is the process's initial thread, the one whose
// OpenMP team PyTorch's CPU ops use (see above), and is not running queued
// work in the worker's place (Stream::running_queued_work). Such work keeps
// the worker's threading: run on the team, the team's threads then spin in
// their barriers on the core the worker needs for the next launches
// (compiled training steps took 0-20 % longer; docs/history/performance-log.md).
bool on_initial_thread();

// Calls function(context, begin, end) over pieces covering [0, total), each
// at least `grain` long, on the calling thread's OpenMP team (the one
// PyTorch's CPU kernels use on that thread), and returns when all have run;
// the pieces are split as ATen's at::parallel_for splits them. Returns false,
// running nothing, when no OpenMP runtime (libgomp) is loaded or the thread is
// already inside a parallel region. (at::parallel_for itself cannot be used
// here: its OpenMP body is an inline pragma, compiled serially into a library
// built without -fopenmp, and building with it would load a second OpenMP
// runtime beside PyTorch's.) `function` must not throw.
using RangeFunction = void (*)(void* context, int64_t begin, int64_t end);
bool parallel_for_on_openmp_team(int64_t total, int64_t grain, RangeFunction function, void* context);

// Calls function(context, begin, end) over pieces covering [0, total), each
// at least `grain` long, on every host thread. On the process's initial thread
// (an inference program running inline, a synchronous copy) the pieces go to
// that thread's OpenMP team, the one PyTorch's CPU kernels and Kiln's library
// calls use there: Kiln's own pool beside it would make two sets of threads
// spin for the same cores (a max_pool2d after a convolution took 3x longer).
// Elsewhere (the stream's worker) Kiln's pool runs them. `function` must not
// throw.
void parallel_over_host_threads(int64_t total, int64_t grain, RangeFunction function, void* context);

// The threads a library call launched now may use: torch.get_num_threads()
// as the launching thread sees it (what the CPU's own kernel would use there).
// Read at the launch, not where the work runs: the setting is per thread.
int launch_thread_count();

// Whether a queued library call runs split over Kiln's pool (split_tasks):
// a call too large for one thread (not `small`), `threads` above 1, on a
// thread other than the initial one. There it would otherwise run on one
// thread (see above); the initial thread's calls use its OpenMP team instead.
bool splits_over_pool(bool small, int threads);

// Calls task(index) for every index in [0, tasks) on Kiln's thread pool, at
// most `threads` threads taking part (the caller included), and returns when
// all have run. Each task runs on one thread with its OpenMP and MKL thread
// counts set to 1, so PyTorch's CPU kernels inside it start no OpenMP team on
// Kiln's threads. Tasks must write disjoint memory. The first exception a task
// throws is rethrown here, after every task ran or was skipped.
using TaskFunction = void (*)(void* context, int64_t task);
void split_tasks(int64_t tasks, int threads, TaskFunction function, void* context);

template <typename Task>
void split_tasks(int64_t tasks, int threads, const Task& task) {
  split_tasks(tasks, threads,
              [](void* context, int64_t index) { (*static_cast<const Task*>(context))(index); },
              const_cast<void*>(static_cast<const void*>(&task)));
}

// [begin, end) of block `block` when `extent` positions are cut into
// `blocks` blocks, each a multiple of `alignment` long but the last.
struct BlockRange {
  int64_t begin;
  int64_t end;
};
BlockRange block_range(int64_t extent, int64_t blocks, int64_t alignment, int64_t block);

// Set for the duration of one library call, on the thread that runs it.
class LibraryThreadScope {
 public:
  // `small`, or a thread other than the initial one: the call runs on the
  // calling thread alone.
  explicit LibraryThreadScope(bool small);
  ~LibraryThreadScope();
  LibraryThreadScope(const LibraryThreadScope&) = delete;
  LibraryThreadScope& operator=(const LibraryThreadScope&) = delete;

 private:
  bool serial_;
  int previous_openmp_threads_ = 0;
  int previous_mkl_threads_ = 0;
};

}  // namespace kiln::torch_integration::library
