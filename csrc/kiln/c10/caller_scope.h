// The dispatch state Kiln's work runs with when a thread other than the
// stream's worker runs it (Stream::set_caller_scope, runtime/stream.h).
//
// Part of the c10 layer, just above the torch line: the runtime cannot name
// PyTorch's dispatch keys, so this layer hands it a scope that runs the work
// under PyTorch's default included and excluded key sets (a fresh thread's):
// the caller's Python dispatch modes and CPU autocast do not reach the ATen
// calls inside the work, and no mode is entered without the GIL.
#pragma once

namespace kiln::torch_integration {

// Sets the scope on Kiln's streams (a process-wide atomic store, safe from any
// thread); idempotent, never fails. runtime() (status_error.h) calls it each
// time it fetches the runtime afresh, so the scope is in place before any op
// launches work.
void install_caller_scope();

}  // namespace kiln::torch_integration
