// The native ops' registration table: allocation, views, set_ and resize_,
// copies, fill_, item(), dropout, the fused RNN cells and the samplers of
// torch.distributions (multinomial, gamma, Dirichlet, Poisson, binomial), whose kernels are
// Kiln's runtime (native_kernels.h).
#include <torch/library.h>

#include "kiln/aten/native/native_kernels.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(native::empty_memory_format));
  m.impl("empty_strided", TORCH_FN(native::empty_strided));
  m.impl("as_strided", TORCH_FN(native::as_strided));
  m.impl("view", TORCH_FN(native::view));
  m.impl("_reshape_alias", TORCH_FN(native::reshape_alias));
  m.impl("unfold", TORCH_FN(native::unfold));
  m.impl("view_as_real", TORCH_FN(native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(native::view_as_complex));
  m.impl("resize_", TORCH_FN(native::resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(native::set_storage_with_offset));
  m.impl("set_.source_Storage", TORCH_FN(native::set_storage));
  m.impl("set_.source_Tensor", TORCH_FN(native::set_tensor));
  m.impl("set_", TORCH_FN(native::set_empty));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(native::has_compatible_shallow_copy_type));
  m.impl("_copy_from", TORCH_FN(native::copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(native::copy_from_and_resize));
  m.impl("fill_.Scalar", TORCH_FN(native::fill_scalar));
  m.impl("fill_.Tensor", TORCH_FN(native::fill_tensor));
  m.impl("zero_", TORCH_FN(native::zero));
  m.impl("_local_scalar_dense", TORCH_FN(native::local_scalar_dense));
  m.impl("native_dropout", TORCH_FN(native::native_dropout));
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(native::fused_lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(native::fused_lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(native::fused_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(native::fused_gru_cell_backward));
  m.impl("multinomial", TORCH_FN(native::multinomial));
  m.impl("multinomial.out", TORCH_FN(native::multinomial_out));
  m.impl("_standard_gamma", TORCH_FN(native::standard_gamma));
  m.impl("_sample_dirichlet", TORCH_FN(native::sample_dirichlet));
  m.impl("poisson", TORCH_FN(native::poisson));
  m.impl("binomial", TORCH_FN(native::binomial));
  m.impl("_standard_gamma_grad", TORCH_FN(native::standard_gamma_grad));
  m.impl("_dirichlet_grad", TORCH_FN(native::dirichlet_grad));
  m.impl("_assert_async", TORCH_FN(native::assert_async));
  m.impl("_assert_async.msg", TORCH_FN(native::assert_async_message));
}

// Copies from lazily conjugated or negated views: resolved on the host
// (native/copy.cc), instead of ATen's fallback for these keys, which recurses
// through _copy_from. Only backends that implement _copy_from reach these.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", TORCH_FN(native::copy_from_resolving_views));
  m.impl("_copy_from_and_resize", TORCH_FN(native::copy_from_and_resize_resolving_views));
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", TORCH_FN(native::copy_from_resolving_views));
  m.impl("_copy_from_and_resize", TORCH_FN(native::copy_from_and_resize_resolving_views));
}

}  // namespace kiln::torch_integration
