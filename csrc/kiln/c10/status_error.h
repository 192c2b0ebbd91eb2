// The boundary between Kiln's Status world and PyTorch's exceptions.
//
// Part of the c10 layer, the first above the torch line: every torch-facing
// layer (c10, aten, distributed, python) reaches the runtime through
// runtime() and turns a failed Status into an exception with check_status(),
// once, here.
//
// check_status() throws the PyTorch exception matching a failed Status, which
// pybind11 and the dispatcher turn into the Python exception users expect:
//   kOutOfMemory      -> torch.OutOfMemoryError
//   kInvalidArgument  -> ValueError
//   kOutOfRange       -> RuntimeError ("... out of range ...")
//   kUnimplemented    -> NotImplementedError
//   anything else     -> RuntimeError
// The message is the Status's, prefixed "kiln: ". runtime() returns the
// process runtime, throwing if it cannot be used (for example in a forked
// child).
//
// Thread-safety: every function may be called from any thread; none takes a
// lock of its own (runtime() keeps the pointer in an atomic). All are
// synchronous; the first call of runtime() in the process creates the
// runtime (devices, allocators, stream workers, which start lazily).
#pragma once

#include "kiln/base/status.h"
#include "kiln/runtime/runtime.h"

namespace kiln::torch_integration {

// Returns when `status` is ok; else throws as above.
void check_status(const Status& status);

// The value of `result`, moved out; throws as check_status() on failure.
template <typename T>
T value_or_throw(StatusOr<T> result) {
  check_status(result.status());
  return std::move(result.value());
}

// The process-wide runtime, created on first use and never destroyed, so the
// reference stays valid until the process exits. Re-checks on every call
// that this is not a forked child of a parent that used the runtime (then it
// throws, every time). Installs the caller scope (caller_scope.h) whenever it
// fetches the runtime afresh.
Runtime& runtime();

// Checks that `device` is a valid index; throws RuntimeError (kOutOfRange)
// naming the valid range. Creates the runtime if needed.
void check_device_index(int device);
// `device`, or the calling thread's current device when it is negative,
// checked as above.
int resolve_device_index(int device);

}  // namespace kiln::torch_integration
