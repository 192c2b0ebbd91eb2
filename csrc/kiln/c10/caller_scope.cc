#include "kiln/c10/caller_scope.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include "kiln/runtime/stream.h"

namespace kiln::torch_integration {
namespace {

// Work calls ATen's CPU ops on aliases of device memory. On the worker they
// see a fresh thread's dispatch keys; in a caller they would see the
// caller's: its Python dispatch modes (which would then be entered for the
// work's copies, without the GIL) and CPU autocast. The work gets the fresh
// thread's keys wherever it runs.
Status run_with_fresh_dispatch_keys(void* work, Status (*run)(void* work)) {
  c10::impl::ForceDispatchKeyGuard fresh(c10::default_included_set, c10::default_excluded_set);
  return run(work);
}

}  // namespace

void install_caller_scope() { Stream::set_caller_scope(&run_with_fresh_dispatch_keys); }

}  // namespace kiln::torch_integration
