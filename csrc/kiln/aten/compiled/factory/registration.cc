// The factory family's registration table: arange, linspace, logspace, eye,
// tril and triu, and the random number generators. native_dropout stays in
// the native table (native/dropout.cc forwards to random_ops).
#include <torch/library.h>

#include "kiln/aten/compiled/factory/factory_ops.h"
#include "kiln/aten/compiled/factory/random_ops.h"
#include "kiln/aten/compiled/registration_rows.h"

namespace kiln::torch_integration {

// Factories: the out= forms are what the composites (arange, linspace, eye)
// reach; fill_ is native (native/fill.cc), with a compiled kernel for strided
// tensors.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("arange.start_out", TORCH_FN(compiled::arange_out));
  m.impl("linspace.out", TORCH_FN(compiled::linspace_out));
  m.impl("logspace.out", TORCH_FN(compiled::logspace_out));
  m.impl("eye.out", TORCH_FN(compiled::eye_out));
  m.impl("eye.m_out", TORCH_FN(compiled::eye_m_out));
  KILN_IMPL_UNARY(m, tril)
  KILN_IMPL_UNARY(m, triu)
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
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
