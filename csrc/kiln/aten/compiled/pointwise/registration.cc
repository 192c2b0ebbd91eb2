// The pointwise family's registration table: unary and binary math, comparisons,
// bitwise ops, clamp, ternary and scalar-parameterised ops, activations and
// their backwards, complex construction, special functions.
#include <torch/library.h>

#include "kiln/aten/compiled/pointwise/activation_ops.h"
#include "kiln/aten/compiled/pointwise/binary_extra_ops.h"
#include "kiln/aten/compiled/pointwise/binary_ops.h"
#include "kiln/aten/compiled/pointwise/clamp_ops.h"
#include "kiln/aten/compiled/pointwise/complex_conjugate.h"
#include "kiln/aten/compiled/pointwise/complex_ops.h"
#include "kiln/aten/compiled/pointwise/cross_renorm_ops.h"
#include "kiln/aten/compiled/pointwise/glu_prelu_ops.h"
#include "kiln/aten/compiled/pointwise/log_sigmoid_ops.h"
#include "kiln/aten/compiled/pointwise/power_ops.h"
#include "kiln/aten/compiled/pointwise/special_ops.h"
#include "kiln/aten/compiled/pointwise/ternary_ops.h"
#include "kiln/aten/compiled/pointwise/unary_extra_ops.h"
#include "kiln/aten/compiled/pointwise/unary_ops.h"
#include "kiln/aten/compiled/registration_rows.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  KILN_IMPL_BINARY(m, add, "add.Tensor", "add_.Tensor", "add.out")
  KILN_IMPL_BINARY(m, sub, "sub.Tensor", "sub_.Tensor", "sub.out")
  KILN_IMPL_BINARY(m, mul, "mul.Tensor", "mul_.Tensor", "mul.out")
  KILN_IMPL_BINARY(m, div, "div.Tensor", "div_.Tensor", "div.out")
  KILN_IMPL_BINARY(m, div_mode, "div.Tensor_mode", "div_.Tensor_mode", "div.out_mode")
  KILN_IMPL_BINARY(m, remainder, "remainder.Tensor", "remainder_.Tensor", "remainder.Tensor_out")
  KILN_IMPL_BINARY(m, fmod, "fmod.Tensor", "fmod_.Tensor", "fmod.Tensor_out")
  KILN_IMPL_BINARY(m, floor_divide, "floor_divide", "floor_divide_.Tensor", "floor_divide.out")
  KILN_IMPL_BINARY(m, pow, "pow.Tensor_Tensor", "pow_.Tensor", "pow.Tensor_Tensor_out")
  KILN_IMPL_BINARY(m, atan2, "atan2", "atan2_", "atan2.out")
  KILN_IMPL_BINARY(m, copysign, "copysign.Tensor", "copysign_.Tensor", "copysign.out")
  KILN_IMPL_BINARY(m, hypot, "hypot", "hypot_", "hypot.out")
  m.impl("maximum", TORCH_FN(compiled::maximum));
  m.impl("maximum.out", TORCH_FN(compiled::maximum_out));
  m.impl("minimum", TORCH_FN(compiled::minimum));
  m.impl("minimum.out", TORCH_FN(compiled::minimum_out));
  KILN_IMPL_BINARY(m, bitwise_and, "bitwise_and.Tensor", "bitwise_and_.Tensor", "bitwise_and.Tensor_out")
  KILN_IMPL_BINARY(m, bitwise_or, "bitwise_or.Tensor", "bitwise_or_.Tensor", "bitwise_or.Tensor_out")
  KILN_IMPL_BINARY(m, bitwise_xor, "bitwise_xor.Tensor", "bitwise_xor_.Tensor", "bitwise_xor.Tensor_out")
  KILN_IMPL_BINARY(m, bitwise_left_shift, "bitwise_left_shift.Tensor", "bitwise_left_shift_.Tensor",
                   "bitwise_left_shift.Tensor_out")
  KILN_IMPL_BINARY(m, bitwise_right_shift, "bitwise_right_shift.Tensor",
                   "bitwise_right_shift_.Tensor", "bitwise_right_shift.Tensor_out")
  KILN_IMPL_BINARY(m, eq, "eq.Tensor", "eq_.Tensor", "eq.Tensor_out")
  KILN_IMPL_BINARY(m, ne, "ne.Tensor", "ne_.Tensor", "ne.Tensor_out")
  KILN_IMPL_BINARY(m, lt, "lt.Tensor", "lt_.Tensor", "lt.Tensor_out")
  KILN_IMPL_BINARY(m, le, "le.Tensor", "le_.Tensor", "le.Tensor_out")
  KILN_IMPL_BINARY(m, gt, "gt.Tensor", "gt_.Tensor", "gt.Tensor_out")
  KILN_IMPL_BINARY(m, ge, "ge.Tensor", "ge_.Tensor", "ge.Tensor_out")
  KILN_IMPL_BINARY(m, eq_scalar, "eq.Scalar", "eq_.Scalar", "eq.Scalar_out")
  KILN_IMPL_BINARY(m, ne_scalar, "ne.Scalar", "ne_.Scalar", "ne.Scalar_out")
  KILN_IMPL_BINARY(m, lt_scalar, "lt.Scalar", "lt_.Scalar", "lt.Scalar_out")
  KILN_IMPL_BINARY(m, le_scalar, "le.Scalar", "le_.Scalar", "le.Scalar_out")
  KILN_IMPL_BINARY(m, gt_scalar, "gt.Scalar", "gt_.Scalar", "gt.Scalar_out")
  KILN_IMPL_BINARY(m, ge_scalar, "ge.Scalar", "ge_.Scalar", "ge.Scalar_out")
  m.impl("remainder.Scalar_Tensor", TORCH_FN(compiled::remainder_scalar_tensor));
  m.impl("__lshift__.Tensor", TORCH_FN(compiled::lshift_tensor));
  m.impl("__lshift__.Scalar", TORCH_FN(compiled::lshift_scalar));
  m.impl("__ilshift__.Tensor", TORCH_FN(compiled::ilshift_tensor));
  m.impl("__ilshift__.Scalar", TORCH_FN(compiled::ilshift_scalar));
  m.impl("__rshift__.Tensor", TORCH_FN(compiled::rshift_tensor));
  m.impl("__rshift__.Scalar", TORCH_FN(compiled::rshift_scalar));
  m.impl("__irshift__.Tensor", TORCH_FN(compiled::irshift_tensor));
  m.impl("__irshift__.Scalar", TORCH_FN(compiled::irshift_scalar));
  KILN_IMPL_BINARY(m, logical_and, "logical_and", "logical_and_", "logical_and.out")
  KILN_IMPL_BINARY(m, logical_or, "logical_or", "logical_or_", "logical_or.out")
  KILN_IMPL_BINARY(m, logical_xor, "logical_xor", "logical_xor_", "logical_xor.out")
}

// Each op registers its functional, in-place and out= overloads where ATen has
// them, so a structured op does not detour through ATen's generic wrappers
// (which allocate, then redispatch to .out). CompositeImplicitAutograd ops
// (square, fix, where.ScalarOther, float_power, relu6, ...) are left alone: they
// decompose into these. So are CompositeExplicitAutograd ops that keep their
// autograd formula only as composites (mish_backward's double backward).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  KILN_IMPL_UNARY(m, abs)
  KILN_IMPL_UNARY(m, neg)
  KILN_IMPL_UNARY(m, sign)
  KILN_IMPL_UNARY(m, sgn)
  KILN_IMPL_UNARY(m, exp)
  KILN_IMPL_UNARY(m, exp2)
  KILN_IMPL_UNARY(m, expm1)
  KILN_IMPL_UNARY(m, log)
  KILN_IMPL_UNARY(m, log2)
  KILN_IMPL_UNARY(m, log10)
  KILN_IMPL_UNARY(m, log1p)
  KILN_IMPL_UNARY(m, sqrt)
  KILN_IMPL_UNARY(m, rsqrt)
  KILN_IMPL_UNARY(m, reciprocal)
  KILN_IMPL_UNARY(m, sin)
  KILN_IMPL_UNARY(m, cos)
  KILN_IMPL_UNARY(m, tan)
  KILN_IMPL_UNARY(m, asin)
  KILN_IMPL_UNARY(m, acos)
  KILN_IMPL_UNARY(m, atan)
  KILN_IMPL_UNARY(m, sinh)
  KILN_IMPL_UNARY(m, cosh)
  KILN_IMPL_UNARY(m, tanh)
  KILN_IMPL_UNARY(m, asinh)
  KILN_IMPL_UNARY(m, acosh)
  KILN_IMPL_UNARY(m, atanh)
  KILN_IMPL_UNARY(m, erf)
  KILN_IMPL_UNARY(m, erfc)
  KILN_IMPL_UNARY(m, lgamma)
  KILN_IMPL_UNARY(m, sigmoid)
  KILN_IMPL_UNARY(m, floor)
  KILN_IMPL_UNARY(m, ceil)
  KILN_IMPL_UNARY(m, round)
  KILN_IMPL_UNARY(m, trunc)
  KILN_IMPL_UNARY(m, frac)
  KILN_IMPL_UNARY(m, bitwise_not)
  KILN_IMPL_UNARY(m, logical_not)
  m.impl("round.decimals", TORCH_FN(compiled::round_decimals));
  m.impl("round_.decimals", TORCH_FN(compiled::round_decimals_));
  m.impl("round.decimals_out", TORCH_FN(compiled::round_decimals_out));
  m.impl("isnan", TORCH_FN(compiled::isnan));
  m.impl("isinf", TORCH_FN(compiled::isinf));
  m.impl("isposinf", TORCH_FN(compiled::isposinf));
  m.impl("isposinf.out", TORCH_FN(compiled::isposinf_out));
  m.impl("isneginf", TORCH_FN(compiled::isneginf));
  m.impl("isneginf.out", TORCH_FN(compiled::isneginf_out));
  m.impl("nan_to_num", TORCH_FN(compiled::nan_to_num));
  m.impl("nan_to_num_", TORCH_FN(compiled::nan_to_num_));
  m.impl("nan_to_num.out", TORCH_FN(compiled::nan_to_num_out));

  m.impl("clamp", TORCH_FN(compiled::clamp));
  m.impl("clamp_", TORCH_FN(compiled::clamp_));
  m.impl("clamp.out", TORCH_FN(compiled::clamp_out));
  m.impl("clamp.Tensor", TORCH_FN(compiled::clamp_tensor));
  m.impl("clamp_.Tensor", TORCH_FN(compiled::clamp_tensor_));
  m.impl("clamp.Tensor_out", TORCH_FN(compiled::clamp_tensor_out));
  KILN_IMPL_UNARY(m, clamp_min)
  KILN_IMPL_UNARY(m, clamp_max)
  m.impl("clamp_min.Tensor", TORCH_FN(compiled::clamp_min_tensor));
  m.impl("clamp_min_.Tensor", TORCH_FN(compiled::clamp_min_tensor_));
  m.impl("clamp_min.Tensor_out", TORCH_FN(compiled::clamp_min_tensor_out));
  m.impl("clamp_max.Tensor", TORCH_FN(compiled::clamp_max_tensor));
  m.impl("clamp_max_.Tensor", TORCH_FN(compiled::clamp_max_tensor_));
  m.impl("clamp_max.Tensor_out", TORCH_FN(compiled::clamp_max_tensor_out));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("where.self", TORCH_FN(compiled::where));
  m.impl("where.self_out", TORCH_FN(compiled::where_out));
  m.impl("lerp.Scalar", TORCH_FN(compiled::lerp_scalar));
  m.impl("lerp_.Scalar", TORCH_FN(compiled::lerp_scalar_));
  m.impl("lerp.Scalar_out", TORCH_FN(compiled::lerp_scalar_out));
  m.impl("lerp.Tensor", TORCH_FN(compiled::lerp_tensor));
  m.impl("lerp_.Tensor", TORCH_FN(compiled::lerp_tensor_));
  m.impl("lerp.Tensor_out", TORCH_FN(compiled::lerp_tensor_out));
  KILN_IMPL_UNARY(m, addcmul)
  KILN_IMPL_UNARY(m, addcdiv)
  // masked_fill.*_out stay composites (functional, then a copy).
  m.impl("masked_fill.Scalar", TORCH_FN(compiled::masked_fill_scalar));
  m.impl("masked_fill_.Scalar", TORCH_FN(compiled::masked_fill_scalar_));
  m.impl("masked_fill.Tensor", TORCH_FN(compiled::masked_fill_tensor));
  m.impl("masked_fill_.Tensor", TORCH_FN(compiled::masked_fill_tensor_));
  m.impl("pow.Tensor_Scalar", TORCH_FN(compiled::pow_tensor_scalar));
  m.impl("pow_.Scalar", TORCH_FN(compiled::pow_tensor_scalar_));
  m.impl("pow.Tensor_Scalar_out", TORCH_FN(compiled::pow_tensor_scalar_out));
  m.impl("pow.Scalar", TORCH_FN(compiled::pow_scalar));
  m.impl("pow.Scalar_out", TORCH_FN(compiled::pow_scalar_out));
}

// Activations and the backward kernels of their autograd formulas.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("relu", TORCH_FN(compiled::relu));
  m.impl("relu_", TORCH_FN(compiled::relu_));
  KILN_IMPL_UNARY(m, threshold)
  m.impl("threshold_backward", TORCH_FN(compiled::threshold_backward));
  m.impl("threshold_backward.grad_input", TORCH_FN(compiled::threshold_backward_out));
  KILN_IMPL_UNARY(m, gelu)
  m.impl("gelu_backward", TORCH_FN(compiled::gelu_backward));
  m.impl("gelu_backward.grad_input", TORCH_FN(compiled::gelu_backward_out));
  KILN_IMPL_UNARY(m, silu)
  KILN_IMPL_UNARY(m, mish)
  KILN_IMPL_UNARY(m, hardsigmoid)
  KILN_IMPL_UNARY(m, hardswish)
  KILN_IMPL_UNARY(m, leaky_relu)
  KILN_IMPL_UNARY(m, hardtanh)
  KILN_IMPL_UNARY(m, elu)
  m.impl("log_sigmoid_forward", TORCH_FN(compiled::log_sigmoid_forward));
  m.impl("log_sigmoid_forward.output", TORCH_FN(compiled::log_sigmoid_forward_out));
  m.impl("log_sigmoid_backward", TORCH_FN(compiled::log_sigmoid_backward));
  m.impl("log_sigmoid_backward.grad_input", TORCH_FN(compiled::log_sigmoid_backward_out));
  m.impl("softplus", TORCH_FN(compiled::softplus));
  m.impl("softplus.out", TORCH_FN(compiled::softplus_out));
  KILN_IMPL_BACKWARD(m, silu_backward, "silu_backward.grad_input")
  KILN_IMPL_BACKWARD(m, sigmoid_backward, "sigmoid_backward.grad_input")
  KILN_IMPL_BACKWARD(m, tanh_backward, "tanh_backward.grad_input")
  KILN_IMPL_BACKWARD(m, hardsigmoid_backward, "hardsigmoid_backward.grad_input")
  KILN_IMPL_BACKWARD(m, hardswish_backward, "hardswish_backward.out")
  KILN_IMPL_BACKWARD(m, leaky_relu_backward, "leaky_relu_backward.grad_input")
  KILN_IMPL_BACKWARD(m, hardtanh_backward, "hardtanh_backward.grad_input")
  KILN_IMPL_BACKWARD(m, elu_backward, "elu_backward.grad_input")
  KILN_IMPL_BACKWARD(m, softplus_backward, "softplus_backward.grad_input")
}

// Overloads that ATen implements as composites of these (xlogy.Scalar_Self,
// special_xlog1py.other_scalar, frexp.Tensor, cross, kl_div, ...) are left to
// decompose.
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

// The Scalar overloads of zeta and the polynomials (x_scalar, n_scalar) and
// the torch.special aliases (special_digamma, special_polygamma, special_i0,
// special_erfinv, ...) are composites over these, and polygamma_ calls
// polygamma.out, so they are left alone.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  KILN_IMPL_UNARY(m, digamma)
  KILN_IMPL_UNARY(m, erfinv)
  KILN_IMPL_UNARY(m, i0)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_i0e)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_i1)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_i1e)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_ndtri)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_log_ndtr)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_erfcx)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_bessel_j0)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_bessel_j1)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_bessel_y0)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_bessel_y1)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_modified_bessel_i0)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_modified_bessel_i1)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_modified_bessel_k0)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_modified_bessel_k1)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_scaled_modified_bessel_k0)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_scaled_modified_bessel_k1)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_spherical_bessel_j0)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_airy_ai)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_zeta)
  KILN_IMPL_UNARY(m, igamma)
  KILN_IMPL_UNARY(m, igammac)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_chebyshev_polynomial_t)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_chebyshev_polynomial_u)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_chebyshev_polynomial_v)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_chebyshev_polynomial_w)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_shifted_chebyshev_polynomial_t)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_shifted_chebyshev_polynomial_u)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_shifted_chebyshev_polynomial_v)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_shifted_chebyshev_polynomial_w)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_hermite_polynomial_h)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_hermite_polynomial_he)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_laguerre_polynomial_l)
  KILN_IMPL_FUNCTIONAL_OUT(m, special_legendre_polynomial_p)
  m.impl("polygamma", TORCH_FN(compiled::polygamma));
  m.impl("polygamma.out", TORCH_FN(compiled::polygamma_out));
}
// The materialized conjugate the inverse Hermitian FFTs end with
// (complex_conjugate.h).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("conj_physical.out", TORCH_FN(compiled::conj_physical_out));
  m.impl("conj_physical_", TORCH_FN(compiled::conj_physical_));
}

}  // namespace kiln::torch_integration
