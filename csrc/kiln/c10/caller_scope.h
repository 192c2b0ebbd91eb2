// The dispatch state Kiln's work runs with when a thread other than the
// stream's worker runs it (Stream::set_caller_scope, runtime/stream.h).
#pragma once

namespace kiln::torch_integration {

// Sets the scope on Kiln's streams; idempotent. Called when the runtime is
// first used.
void install_caller_scope();

}  // namespace kiln::torch_integration
