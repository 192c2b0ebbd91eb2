#include "kiln/distributed/abort_report.h"

#include <cstdio>
#include <exception>
#include <mutex>
#include <sstream>
#include <string>

namespace kiln::torch_integration::distributed {
namespace {

std::mutex note_mutex;
char last_note[512] = "";  // a fixed buffer: the handler must not allocate
std::terminate_handler previous_handler = nullptr;

void report_then_terminate() {
  // Read the note without blocking: the thread that holds the mutex may be
  // the one terminating.
  bool locked = note_mutex.try_lock();
  bool noted = last_note[0] != '\0';
  if (noted && std::current_exception()) {
    std::string cause = "an unknown exception";
    try {
      std::rethrow_exception(std::current_exception());
    } catch (const std::exception& error) {
      cause = error.what();
    } catch (...) {
    }
    std::fprintf(stderr,
                 "kiln: the process is ending inside the collective transport while %s was the "
                 "last collective it started. The transport's error: %s\n"
                 "kiln: a size mismatch here means the ranks called this collective with "
                 "different shapes or dtypes. Run with TORCH_DISTRIBUTED_DEBUG=DETAIL to get an "
                 "exception on every rank naming each rank's shapes and dtypes.\n",
                 last_note, cause.c_str());
    std::fflush(stderr);
  }
  if (locked) note_mutex.unlock();
  if (previous_handler) previous_handler();
  std::abort();
}

}  // namespace

void note_collective(const char* name, int rank, int size, const at::Tensor* first) {
  std::ostringstream text;
  text << name << " on rank " << rank << " of " << size;
  if (first) text << " (" << first->scalar_type() << " " << first->sizes() << ")";
  std::lock_guard<std::mutex> lock(note_mutex);
  std::snprintf(last_note, sizeof(last_note), "%s", text.str().c_str());
}

void install_abort_report() {
  static std::once_flag installed;
  std::call_once(installed, [] { previous_handler = std::set_terminate(report_then_terminate); });
}

}  // namespace kiln::torch_integration::distributed
