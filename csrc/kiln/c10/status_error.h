// The boundary between Kiln's Status world and PyTorch's exceptions.
//
// check_status() throws the PyTorch exception matching a failed Status, which
// pybind11 and the dispatcher turn into the Python exception users expect:
//   kOutOfMemory      -> torch.OutOfMemoryError
//   kInvalidArgument  -> ValueError
//   kOutOfRange       -> RuntimeError ("... out of range ...")
//   kUnimplemented    -> NotImplementedError
//   anything else     -> RuntimeError
// runtime() returns the process runtime, throwing if it cannot be used (for
// example in a forked child).
#pragma once

#include "kiln/base/status.h"
#include "kiln/runtime/runtime.h"

namespace kiln::torch_integration {

void check_status(const Status& status);

template <typename T>
T value_or_throw(StatusOr<T> result) {
  check_status(result.status());
  return std::move(result.value());
}

Runtime& runtime();

// Checks that `device` is a valid index; throws naming the valid range.
void check_device_index(int device);
// `device`, or the current device when it is negative, checked.
int resolve_device_index(int device);

}  // namespace kiln::torch_integration
