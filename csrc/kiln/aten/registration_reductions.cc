// The compiled reductions' registration table (kernels in compiled/).
#include <torch/library.h>

#include "kiln/aten/compiled/reduction_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sum.dim_IntList", TORCH_FN(compiled::sum));
  m.impl("sum.IntList_out", TORCH_FN(compiled::sum_out));
  m.impl("mean.dim", TORCH_FN(compiled::mean));
  m.impl("mean.out", TORCH_FN(compiled::mean_out));
  m.impl("amax", TORCH_FN(compiled::amax));
  m.impl("amax.out", TORCH_FN(compiled::amax_out));
  m.impl("amin", TORCH_FN(compiled::amin));
  m.impl("amin.out", TORCH_FN(compiled::amin_out));
}

}  // namespace kiln::torch_integration
