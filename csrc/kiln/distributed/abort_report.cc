#include "kiln/distributed/abort_report.h"

#include <c10/core/ScalarType.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>

namespace kiln::torch_integration::distributed {
namespace {

// The last collective, kept as plain values: noting one costs a few stores,
// and the terminate handler formats it without allocating.
struct Note {
  const char* name = nullptr;  // a string literal of backend.cc
  int rank = 0;
  int size = 0;
  bool has_tensor = false;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  int dims = 0;
  int64_t sizes[8] = {};
};
constexpr int kShownDims = 8;

std::mutex note_mutex;
Note last_note;
std::terminate_handler previous_handler = nullptr;

// "all_reduce on rank 0 of 2 (Float [4, 8])" into `text`.
void describe(const Note& note, char* text, size_t capacity) {
  int used = std::snprintf(text, capacity, "%s on rank %d of %d", note.name, note.rank, note.size);
  if (!note.has_tensor || used < 0) return;
  used += std::snprintf(text + used, capacity - std::min<size_t>(used, capacity), " (%s [",
                        c10::toString(note.dtype));
  for (int dim = 0; dim < std::min(note.dims, kShownDims) && static_cast<size_t>(used) < capacity;
       ++dim) {
    used += std::snprintf(text + used, capacity - used, dim ? ", %lld" : "%lld",
                          static_cast<long long>(note.sizes[dim]));
  }
  if (static_cast<size_t>(used) < capacity) {
    std::snprintf(text + used, capacity - used, note.dims > kShownDims ? ", ...])" : "])");
  }
}

void report_then_terminate() {
  // Read the note without blocking: the thread that holds the mutex may be
  // the one terminating.
  bool locked = note_mutex.try_lock();
  Note note = last_note;
  if (locked) note_mutex.unlock();
  if (note.name != nullptr && std::current_exception()) {
    const char* cause = "an unknown exception";
    try {
      std::rethrow_exception(std::current_exception());
    } catch (const std::exception& error) {
      cause = error.what();
    } catch (...) {
    }
    char collective[256];
    describe(note, collective, sizeof(collective));
    std::fprintf(stderr,
                 "kiln: the process is ending inside the collective transport while %s was the "
                 "last collective it started. The transport's error: %s\n"
                 "kiln: a size mismatch here means the ranks called this collective with "
                 "different shapes or dtypes. Run with TORCH_DISTRIBUTED_DEBUG=DETAIL to get an "
                 "exception on every rank naming each rank's shapes and dtypes.\n",
                 collective, cause);
    std::fflush(stderr);
  }
  if (previous_handler) previous_handler();
  std::abort();
}

}  // namespace

void note_collective(const char* name, int rank, int size, const at::Tensor* first) {
  Note note;
  note.name = name;
  note.rank = rank;
  note.size = size;
  if (first != nullptr) {
    note.has_tensor = true;
    note.dtype = first->scalar_type();
    note.dims = static_cast<int>(first->dim());
    for (int dim = 0; dim < std::min(note.dims, kShownDims); ++dim) note.sizes[dim] = first->size(dim);
  }
  std::lock_guard<std::mutex> lock(note_mutex);
  last_note = note;
}

void install_abort_report() {
  static std::once_flag installed;
  std::call_once(installed, [] { previous_handler = std::set_terminate(report_then_terminate); });
}

}  // namespace kiln::torch_integration::distributed
