// The distance family's registration table: cdist and pdist.
#include <torch/library.h>

#include "kiln/aten/compiled/nn/distance/distance_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_cdist_forward", TORCH_FN(compiled::cdist_forward));
  m.impl("_cdist_backward", TORCH_FN(compiled::cdist_backward));
  m.impl("_pdist_forward", TORCH_FN(compiled::pdist_forward));
  m.impl("_pdist_backward", TORCH_FN(compiled::pdist_backward));
}

}  // namespace kiln::torch_integration
