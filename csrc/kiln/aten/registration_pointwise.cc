// The compiled pointwise family's registration table: unary math, clamp,
// ternary and scalar-parameterised ops, activations and their backward,
// factories. Kernels live in compiled/.
//
// Each op registers its functional, in-place and out= overloads where ATen has
// them, so a structured op does not detour through ATen's generic wrappers
// (which allocate, then redispatch to .out). CompositeImplicitAutograd ops
// (square, fix, where.ScalarOther, float_power, relu6, ...) are left alone: they
// decompose into these. So are CompositeExplicitAutograd ops that keep their
// autograd formula only as composites (mish_backward's double backward).
#include <torch/library.h>

#include "kiln/aten/compiled/activation_ops.h"
#include "kiln/aten/compiled/clamp_ops.h"
#include "kiln/aten/compiled/factory_ops.h"
#include "kiln/aten/compiled/log_sigmoid_ops.h"
#include "kiln/aten/compiled/power_ops.h"
#include "kiln/aten/compiled/ternary_ops.h"
#include "kiln/aten/compiled/unary_ops.h"

namespace kiln::torch_integration {

#define KILN_IMPL_UNARY(m, name)                             \
  m.impl(#name, TORCH_FN(compiled::name));                   \
  m.impl(#name "_", TORCH_FN(compiled::name##_));            \
  m.impl(#name ".out", TORCH_FN(compiled::name##_out));

#define KILN_IMPL_BACKWARD(m, name, out)            \
  m.impl(#name, TORCH_FN(compiled::name));          \
  m.impl(out, TORCH_FN(compiled::name##_out));

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

#undef KILN_IMPL_UNARY
#undef KILN_IMPL_BACKWARD

}  // namespace kiln::torch_integration
