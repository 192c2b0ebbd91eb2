// The registration table of the losses, distances and statistics family
// (kernels in compiled/): binary cross entropy, smooth l1, huber, multi
// margin, multilabel margin and ctc losses; hash_tensor; cdist and pdist;
// the flash attention for cpu that scaled_dot_product_attention picks.
#include <torch/library.h>

#include "kiln/aten/compiled/attention_for_cpu_ops.h"
#include "kiln/aten/compiled/classification_loss_ops.h"
#include "kiln/aten/compiled/ctc_loss_ops.h"
#include "kiln/aten/compiled/distance_ops.h"
#include "kiln/aten/compiled/hash_ops.h"
#include "kiln/aten/compiled/margin_loss_ops.h"
#include "kiln/aten/compiled/multilabel_margin_loss_ops.h"
#include "kiln/aten/compiled/robust_regression_loss_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("binary_cross_entropy", TORCH_FN(compiled::binary_cross_entropy));
  m.impl("binary_cross_entropy.out", TORCH_FN(compiled::binary_cross_entropy_out));
  m.impl("binary_cross_entropy_backward", TORCH_FN(compiled::binary_cross_entropy_backward));
  m.impl("binary_cross_entropy_backward.grad_input",
         TORCH_FN(compiled::binary_cross_entropy_backward_out));

  m.impl("smooth_l1_loss", TORCH_FN(compiled::smooth_l1_loss));
  m.impl("smooth_l1_loss.out", TORCH_FN(compiled::smooth_l1_loss_out));
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(compiled::smooth_l1_loss_backward_out));
  m.impl("huber_loss", TORCH_FN(compiled::huber_loss));
  m.impl("huber_loss.out", TORCH_FN(compiled::huber_loss_out));
  m.impl("huber_loss_backward.out", TORCH_FN(compiled::huber_loss_backward_out));

  m.impl("multi_margin_loss", TORCH_FN(compiled::multi_margin_loss));
  m.impl("multi_margin_loss.out", TORCH_FN(compiled::multi_margin_loss_out));
  m.impl("multi_margin_loss_backward", TORCH_FN(compiled::multi_margin_loss_backward));
  m.impl("multi_margin_loss_backward.grad_input", TORCH_FN(compiled::multi_margin_loss_backward_out));
  m.impl("multilabel_margin_loss_forward", TORCH_FN(compiled::multilabel_margin_loss_forward));
  m.impl("multilabel_margin_loss_forward.output", TORCH_FN(compiled::multilabel_margin_loss_forward_out));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(compiled::multilabel_margin_loss_backward));
  m.impl("multilabel_margin_loss_backward.grad_input",
         TORCH_FN(compiled::multilabel_margin_loss_backward_out));
  m.impl("_ctc_loss", TORCH_FN(compiled::ctc_loss));
  m.impl("_ctc_loss_backward", TORCH_FN(compiled::ctc_loss_backward));

  m.impl("hash_tensor", TORCH_FN(compiled::hash_tensor));
  m.impl("hash_tensor.out", TORCH_FN(compiled::hash_tensor_out));

  m.impl("_cdist_forward", TORCH_FN(compiled::cdist_forward));
  m.impl("_cdist_backward", TORCH_FN(compiled::cdist_backward));
  m.impl("_pdist_forward", TORCH_FN(compiled::pdist_forward));
  m.impl("_pdist_backward", TORCH_FN(compiled::pdist_backward));

  m.impl("_scaled_dot_product_flash_attention_for_cpu", TORCH_FN(compiled::flash_attention_for_cpu));
  m.impl("_scaled_dot_product_flash_attention_for_cpu_backward",
         TORCH_FN(compiled::flash_attention_for_cpu_backward));
}

}  // namespace kiln::torch_integration
