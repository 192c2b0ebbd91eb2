// The sorting, selection, search and scan family's registration table
// (kernels in compiled/sort_ops.cc and its neighbours). Ops that ATen
// implements as CompositeImplicitAutograd (argsort, msort, ...) are left to
// decompose into these, so autograd keeps working through them.
#include <torch/library.h>

#include "kiln/aten/compiled/sort_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sort.stable", TORCH_FN(compiled::sort_stable));
  m.impl("sort.values_stable", TORCH_FN(compiled::sort_stable_out));
}

}  // namespace kiln::torch_integration
