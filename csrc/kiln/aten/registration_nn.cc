// The compiled nn ops' registration table (kernels in compiled/): softmax and
// log_softmax, forward and backward.
#include <torch/library.h>

#include "kiln/aten/compiled/softmax_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_softmax", TORCH_FN(compiled::softmax));
  m.impl("_softmax.out", TORCH_FN(compiled::softmax_out));
  m.impl("_log_softmax", TORCH_FN(compiled::log_softmax));
  m.impl("_log_softmax.out", TORCH_FN(compiled::log_softmax_out));
  m.impl("_softmax_backward_data", TORCH_FN(compiled::softmax_backward_data));
  m.impl("_softmax_backward_data.out", TORCH_FN(compiled::softmax_backward_data_out));
  m.impl("_log_softmax_backward_data", TORCH_FN(compiled::log_softmax_backward_data));
  m.impl("_log_softmax_backward_data.out", TORCH_FN(compiled::log_softmax_backward_data_out));
}

}  // namespace kiln::torch_integration
