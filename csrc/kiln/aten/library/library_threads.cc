#include "kiln/aten/library/library_threads.h"

#include <ATen/Parallel.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <mutex>

#include "kiln/runtime/stream.h"
#include "kiln/runtime/thread_pool.h"

// The OpenMP runtime and MKL that PyTorch's CPU library loaded, found through
// libtorch_cpu's dependencies. Weak: a PyTorch built without OpenMP or MKL
// leaves them null, and the scope sets only what exists.
extern "C" {
void omp_set_num_threads(int threads) __attribute__((weak));
int omp_get_max_threads() __attribute__((weak));
// MKL's C entry point (its header maps mkl_set_num_threads_local to it; the
// lower-case symbol is the Fortran one, which takes a pointer).
int MKL_Set_Num_Threads_Local(int threads) __attribute__((weak));
// libgomp's entry for a parallel region (what `#pragma omp parallel` compiles
// to) and the queries its body makes.
void GOMP_parallel(void (*body)(void*), void* data, unsigned threads, unsigned flags) __attribute__((weak));
int omp_get_num_threads() __attribute__((weak));
int omp_get_thread_num() __attribute__((weak));
int omp_in_parallel() __attribute__((weak));
}

namespace kiln::torch_integration::library {

double matmul_flops(int64_t batches, int64_t m, int64_t k, int64_t n) {
  return 2.0 * static_cast<double>(batches) * static_cast<double>(m) * static_cast<double>(k) *
         static_cast<double>(n);
}

namespace {

struct TeamJob {
  RangeFunction function;
  void* context;
  int64_t total;
  int64_t grain;
};

// Each team member takes one contiguous piece, as ATen's invoke_parallel does.
void run_team_piece(void* data) {
  const auto* job = static_cast<const TeamJob*>(data);
  int64_t threads = omp_get_num_threads();
  threads = std::min(threads, (job->total + job->grain - 1) / job->grain);
  const int64_t piece = (job->total + threads - 1) / threads;
  const int64_t begin = omp_get_thread_num() * piece;
  if (begin < job->total) job->function(job->context, begin, std::min(job->total, begin + piece));
}

void run_pytorch_thread_init() {
  // Not at::internal::lazy_init_num_threads(): its once-per-thread flag is an
  // inline function's thread_local, of which this library has its own copy
  // (libtorch does not export it), so calling it here left libtorch's unset,
  // and libtorch's first parallel loop on the thread (a TensorIterator copy
  // inside linalg_qr or an FFT) reset the count and started a second OpenMP
  // team. at::get_num_threads() runs libtorch's own.
  (void)at::get_num_threads();
}

}  // namespace

bool parallel_for_on_openmp_team(int64_t total, int64_t grain, RangeFunction function, void* context) {
  if (GOMP_parallel == nullptr || omp_get_num_threads == nullptr || omp_get_thread_num == nullptr ||
      omp_in_parallel == nullptr || omp_in_parallel()) {
    return false;
  }
  run_pytorch_thread_init();
  TeamJob job{function, context, total, std::max<int64_t>(grain, 1)};
  // Every member of the team, as ATen asks for (a num_threads clause hit
  // libgomp thread-pool bugs, pytorch issue 32008); extra members find no piece.
  GOMP_parallel(&run_team_piece, &job, 0, 0);
  return true;
}

bool on_initial_thread() {
  // Linux: the initial thread's id is the process id.
  static const pid_t process = getpid();
  thread_local const bool initial = static_cast<pid_t>(syscall(SYS_gettid)) == process;
  return initial && !Stream::running_queued_work();
}

void parallel_over_host_threads(int64_t total, int64_t grain, RangeFunction function, void* context) {
  if (on_initial_thread()) {
    ThreadPool::instance().stop_polling();  // the team takes the cores
    if (parallel_for_on_openmp_team(total, grain, function, context)) return;
  }
  ThreadPool::instance().parallel_for(total, grain, function, context);
}

int launch_thread_count() { return at::get_num_threads(); }

bool splits_over_pool(bool small, int threads) { return !small && threads > 1 && !on_initial_thread(); }

namespace {

struct SplitJob {
  TaskFunction function;
  void* context;
  std::mutex mutex;
  std::exception_ptr error;  // the first a task threw
};

void run_split_range(void* context, int64_t begin, int64_t end) {
  auto* job = static_cast<SplitJob*>(context);
  LibraryThreadScope one_thread(true);
  for (int64_t task = begin; task < end; ++task) {
    try {
      job->function(job->context, task);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job->mutex);
      if (!job->error) job->error = std::current_exception();
    }
  }
}

}  // namespace

void split_tasks(int64_t tasks, int threads, TaskFunction function, void* context) {
  SplitJob job{function, context, {}, nullptr};
  ThreadPool& pool = ThreadPool::instance();
  pool.parallel_for(tasks, 1, &run_split_range, &job, threads);
  if (job.error) std::rethrow_exception(job.error);
}

BlockRange block_range(int64_t extent, int64_t blocks, int64_t alignment, int64_t block) {
  int64_t length = (extent + blocks - 1) / blocks;
  length = (length + alignment - 1) / alignment * alignment;
  const int64_t begin = std::min(extent, block * length);
  return {begin, std::min(extent, begin + length)};
}

LibraryThreadScope::LibraryThreadScope(bool small) : serial_(small || !on_initial_thread()) {
  if (!serial_) {
    ThreadPool::instance().stop_polling();  // the library's team takes the cores
    return;
  }
  // PyTorch sets a thread's OpenMP thread count (after torch.set_num_threads,
  // to that count) on its first parallel loop; do it now, so that first loop
  // does not undo the setting below.
  run_pytorch_thread_init();
  if (omp_get_max_threads != nullptr && omp_set_num_threads != nullptr) {
    previous_openmp_threads_ = omp_get_max_threads();
    omp_set_num_threads(1);
  }
  // 0 would mean "follow the global setting": MKL returns the previous local value.
  if (MKL_Set_Num_Threads_Local != nullptr) previous_mkl_threads_ = MKL_Set_Num_Threads_Local(1);
}

LibraryThreadScope::~LibraryThreadScope() {
  if (!serial_) return;
  if (previous_openmp_threads_ > 0) omp_set_num_threads(previous_openmp_threads_);
  if (MKL_Set_Num_Threads_Local != nullptr) MKL_Set_Num_Threads_Local(previous_mkl_threads_);
}

}  // namespace kiln::torch_integration::library
