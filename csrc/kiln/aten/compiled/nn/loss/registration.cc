// The loss family's registration table: mse, nll (1-D and 2-D), binary cross
// entropy, smooth l1, huber, multi margin, multilabel margin and
// ctc losses, forward and backward.
#include <torch/library.h>

#include "kiln/aten/compiled/nn/loss/classification_loss_ops.h"
#include "kiln/aten/compiled/nn/loss/ctc_loss_ops.h"
#include "kiln/aten/compiled/nn/loss/loss_ops.h"
#include "kiln/aten/compiled/nn/loss/margin_loss_ops.h"
#include "kiln/aten/compiled/nn/loss/multilabel_margin_loss_ops.h"
#include "kiln/aten/compiled/nn/loss/regression_loss_ops.h"
#include "kiln/aten/compiled/nn/loss/robust_regression_loss_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mse_loss", TORCH_FN(compiled::mse_loss));
  m.impl("mse_loss.out", TORCH_FN(compiled::mse_loss_out));
  m.impl("mse_loss_backward", TORCH_FN(compiled::mse_loss_backward));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(compiled::mse_loss_backward_out));
  m.impl("nll_loss_forward", TORCH_FN(compiled::nll_loss_forward));
  m.impl("nll_loss_forward.output", TORCH_FN(compiled::nll_loss_forward_out));
  m.impl("nll_loss_backward", TORCH_FN(compiled::nll_loss_backward));
  m.impl("nll_loss_backward.grad_input", TORCH_FN(compiled::nll_loss_backward_out));
  m.impl("nll_loss2d_forward", TORCH_FN(compiled::nll_loss2d_forward));
  m.impl("nll_loss2d_forward.output", TORCH_FN(compiled::nll_loss2d_forward_out));
  m.impl("nll_loss2d_backward", TORCH_FN(compiled::nll_loss2d_backward));
  m.impl("nll_loss2d_backward.grad_input", TORCH_FN(compiled::nll_loss2d_backward_out));
}

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
}

}  // namespace kiln::torch_integration
