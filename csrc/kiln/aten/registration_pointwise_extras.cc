// The pointwise extras' registration table: the remaining pointwise and small
// composite ops (fmax, logaddexp, xlogy, logit, the shrinks, glu, prelu,
// cross, renorm, ...). Kernels live in compiled/.
//
// Overloads that ATen implements as composites of these (xlogy.Scalar_Self,
// special_xlog1py.other_scalar, frexp.Tensor, cross, kl_div, ...) are left to
// decompose.
#include <torch/library.h>

#include "kiln/aten/compiled/binary_extra_ops.h"
#include "kiln/aten/compiled/complex_ops.h"
#include "kiln/aten/compiled/cross_renorm_ops.h"
#include "kiln/aten/compiled/glu_prelu_ops.h"
#include "kiln/aten/compiled/unary_extra_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fmax", TORCH_FN(compiled::fmax));
  m.impl("fmax.out", TORCH_FN(compiled::fmax_out));
  m.impl("fmin", TORCH_FN(compiled::fmin));
  m.impl("fmin.out", TORCH_FN(compiled::fmin_out));
  m.impl("heaviside", TORCH_FN(compiled::heaviside));
  m.impl("heaviside_", TORCH_FN(compiled::heaviside_));
  m.impl("heaviside.out", TORCH_FN(compiled::heaviside_out));
  m.impl("logaddexp", TORCH_FN(compiled::logaddexp));
  m.impl("logaddexp.out", TORCH_FN(compiled::logaddexp_out));
  m.impl("logaddexp2", TORCH_FN(compiled::logaddexp2));
  m.impl("logaddexp2.out", TORCH_FN(compiled::logaddexp2_out));
  m.impl("xlogy.Tensor", TORCH_FN(compiled::xlogy));
  m.impl("xlogy_.Tensor", TORCH_FN(compiled::xlogy_));
  m.impl("xlogy.OutTensor", TORCH_FN(compiled::xlogy_out));
  m.impl("special_xlog1py", TORCH_FN(compiled::special_xlog1py));
  m.impl("special_xlog1py.out", TORCH_FN(compiled::special_xlog1py_out));
  m.impl("nextafter", TORCH_FN(compiled::nextafter));
  m.impl("nextafter_", TORCH_FN(compiled::nextafter_));
  m.impl("nextafter.out", TORCH_FN(compiled::nextafter_out));
  m.impl("rsub.Tensor", TORCH_FN(compiled::rsub));
  m.impl("equal", TORCH_FN(compiled::equal));

  m.impl("sinc", TORCH_FN(compiled::sinc));
  m.impl("sinc_", TORCH_FN(compiled::sinc_));
  m.impl("sinc.out", TORCH_FN(compiled::sinc_out));
  m.impl("special_entr", TORCH_FN(compiled::special_entr));
  m.impl("special_entr.out", TORCH_FN(compiled::special_entr_out));
  m.impl("signbit", TORCH_FN(compiled::signbit));
  m.impl("signbit.out", TORCH_FN(compiled::signbit_out));
  m.impl("angle", TORCH_FN(compiled::angle));
  m.impl("angle.out", TORCH_FN(compiled::angle_out));
  m.impl("logit", TORCH_FN(compiled::logit));
  m.impl("logit_", TORCH_FN(compiled::logit_));
  m.impl("logit.out", TORCH_FN(compiled::logit_out));
  m.impl("logit_backward", TORCH_FN(compiled::logit_backward));
  m.impl("logit_backward.grad_input", TORCH_FN(compiled::logit_backward_out));
  m.impl("frexp.Tensor_out", TORCH_FN(compiled::frexp_out));
  m.impl("hardshrink", TORCH_FN(compiled::hardshrink));
  m.impl("hardshrink.out", TORCH_FN(compiled::hardshrink_out));
  m.impl("hardshrink_backward", TORCH_FN(compiled::hardshrink_backward));
  m.impl("hardshrink_backward.grad_input", TORCH_FN(compiled::hardshrink_backward_out));
  m.impl("softshrink", TORCH_FN(compiled::softshrink));
  m.impl("softshrink.out", TORCH_FN(compiled::softshrink_out));
  m.impl("softshrink_backward", TORCH_FN(compiled::softshrink_backward));
  m.impl("softshrink_backward.grad_input", TORCH_FN(compiled::softshrink_backward_out));

  m.impl("glu", TORCH_FN(compiled::glu));
  m.impl("glu.out", TORCH_FN(compiled::glu_out));
  m.impl("glu_backward", TORCH_FN(compiled::glu_backward));
  m.impl("glu_backward.grad_input", TORCH_FN(compiled::glu_backward_out));
  m.impl("_prelu_kernel", TORCH_FN(compiled::prelu_kernel));
  m.impl("_prelu_kernel_backward", TORCH_FN(compiled::prelu_kernel_backward));
  m.impl("linalg_cross", TORCH_FN(compiled::linalg_cross));
  m.impl("linalg_cross.out", TORCH_FN(compiled::linalg_cross_out));
  m.impl("renorm", TORCH_FN(compiled::renorm));
  m.impl("renorm_", TORCH_FN(compiled::renorm_));
  m.impl("renorm.out", TORCH_FN(compiled::renorm_out));
  m.impl("complex.out", TORCH_FN(compiled::complex_out));
  m.impl("polar.out", TORCH_FN(compiled::polar_out));
}

}  // namespace kiln::torch_integration
