// What a rank was doing when Gloo ended the process.
//
// Gloo checks each message's size on its own I/O thread. When the ranks call
// a collective with different shapes or dtypes, that check throws there,
// where nothing can catch it, and the C++ runtime terminates the process.
// Kiln cannot turn that into a Python exception, but it can name what was
// running: every collective notes itself here before it reaches the
// transport, and a terminate handler (chained in front of the previous one)
// prints the last note with the transport's message.
//
// Part of the distributed layer; backend.cc notes each collective that takes
// tensors (barrier is not noted) and installs the handler when a KilnBackend
// is made.
//
// One note per process, not per group or thread: the last collective any
// thread started wins. The handler writes to stderr, calls the previous
// handler, then aborts; it never returns.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::distributed {

// Records `name` (a string literal) with the group rank and size and the
// first tensor's dtype and shape as the collective this process started
// last. Cheap: a few stores under a mutex; the text is made only on abort.
// Any thread. `name` is kept as a pointer, so it must live for the process;
// `first` (may be null) is read during the call only. Never fails.
void note_collective(const char* name, int rank, int size, const at::Tensor* first);

// Installs the terminate handler once per process (later calls do nothing);
// thread-safe (std::call_once). A handler set later by someone else replaces
// it.
void install_abort_report();

}  // namespace kiln::torch_integration::distributed
