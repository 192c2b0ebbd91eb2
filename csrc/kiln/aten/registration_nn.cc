// The compiled nn ops' registration table (kernels in compiled/): softmax,
// losses, normalizations and random numbers. native_dropout stays in the
// native table (native/dropout.cc forwards to compiled/random_ops).
#include <torch/library.h>

#include "kiln/aten/compiled/loss_ops.h"
#include "kiln/aten/compiled/normalization_ops.h"
#include "kiln/aten/compiled/random_ops.h"
#include "kiln/aten/compiled/regression_loss_ops.h"
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

  m.impl("uniform_", TORCH_FN(compiled::uniform_));
  m.impl("normal_", TORCH_FN(compiled::normal_));
  m.impl("bernoulli_.float", TORCH_FN(compiled::bernoulli_float_));
  m.impl("bernoulli_.Tensor", TORCH_FN(compiled::bernoulli_tensor_));
  m.impl("random_", TORCH_FN(compiled::random_));
  m.impl("random_.to", TORCH_FN(compiled::random_to_));
  m.impl("random_.from", TORCH_FN(compiled::random_from_));
  m.impl("exponential_", TORCH_FN(compiled::exponential_));
  m.impl("log_normal_", TORCH_FN(compiled::log_normal_));
  m.impl("cauchy_", TORCH_FN(compiled::cauchy_));
  m.impl("geometric_", TORCH_FN(compiled::geometric_));
  m.impl("normal.Tensor_float", TORCH_FN(compiled::normal_tensor_float));
  m.impl("normal.Tensor_float_out", TORCH_FN(compiled::normal_tensor_float_out));
  m.impl("normal.float_Tensor", TORCH_FN(compiled::normal_float_tensor));
  m.impl("normal.float_Tensor_out", TORCH_FN(compiled::normal_float_tensor_out));
  m.impl("normal.Tensor_Tensor", TORCH_FN(compiled::normal_tensor_tensor));
  m.impl("normal.Tensor_Tensor_out", TORCH_FN(compiled::normal_tensor_tensor_out));
  m.impl("native_dropout_backward", TORCH_FN(compiled::native_dropout_backward));
}

}  // namespace kiln::torch_integration
