// The normalization family's registration table: softmax and log_softmax,
// layer, batch and group norm, forward and backward.
#include <torch/library.h>

#include "kiln/aten/compiled/nn/norm/batch_norm_ops.h"
#include "kiln/aten/compiled/nn/norm/normalization_ops.h"
#include "kiln/aten/compiled/nn/norm/softmax_ops.h"

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

  m.impl("native_layer_norm", TORCH_FN(compiled::native_layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(compiled::native_layer_norm_backward));
  m.impl("native_batch_norm", TORCH_FN(compiled::native_batch_norm));
  m.impl("native_batch_norm.out", TORCH_FN(compiled::native_batch_norm_out));
  m.impl("_native_batch_norm_legit", TORCH_FN(compiled::native_batch_norm_legit));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(compiled::native_batch_norm_legit_no_stats));
  m.impl("_batch_norm_with_update", TORCH_FN(compiled::batch_norm_with_update));
  m.impl("native_batch_norm_backward", TORCH_FN(compiled::native_batch_norm_backward));
  m.impl("batch_norm_backward", TORCH_FN(compiled::batch_norm_backward));
  m.impl("native_group_norm", TORCH_FN(compiled::native_group_norm));
  m.impl("native_group_norm_backward", TORCH_FN(compiled::native_group_norm_backward));
}

}  // namespace kiln::torch_integration
