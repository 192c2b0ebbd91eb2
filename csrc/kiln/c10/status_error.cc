#include "kiln/c10/status_error.h"

#include <c10/util/Exception.h>

#include <atomic>

#include "kiln/c10/caller_scope.h"

namespace kiln::torch_integration {

void check_status(const Status& status) {
  if (status.ok()) return;
  const std::string message = "kiln: " + status.message();
  switch (status.code()) {
    case StatusCode::kOutOfMemory:
      TORCH_CHECK_WITH(OutOfMemoryError, false, message);
    case StatusCode::kInvalidArgument:
      TORCH_CHECK_VALUE(false, message);
    case StatusCode::kUnimplemented:
      TORCH_CHECK_NOT_IMPLEMENTED(false, message);
    default:
      TORCH_CHECK(false, message);
  }
}

Runtime& runtime() {
  // Runtime::get() is cheap after the first call, but this is on every op's
  // path: keep the pointer and only re-check when it is missing or forked.
  static std::atomic<Runtime*> cached{nullptr};
  Runtime* instance = cached.load(std::memory_order_acquire);
  if (instance != nullptr && !Runtime::in_bad_fork()) return *instance;
  instance = value_or_throw(Runtime::get());
  install_caller_scope();
  cached.store(instance, std::memory_order_release);
  return *instance;
}

void check_device_index(int device) { check_status(runtime().check_device(device)); }

int resolve_device_index(int device) {
  int index = device < 0 ? runtime().current_device() : device;
  check_device_index(index);
  return index;
}

}  // namespace kiln::torch_integration
