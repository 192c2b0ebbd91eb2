// The compiled path's registration table: ATen ops whose kernels Kiln
// generates (compiled/). Each op registers its functional, in-place and out=
// overloads, so none pays a detour through ATen's composite wrappers.
#include <torch/library.h>

#include "kiln/aten/compiled/binary_ops.h"
#include "kiln/aten/compiled/foreach_ops.h"

namespace kiln::torch_integration {

#define KILN_IMPL_BINARY(m, name, functional, inplace, out) \
  m.impl(functional, TORCH_FN(compiled::name));             \
  m.impl(inplace, TORCH_FN(compiled::name##_));             \
  m.impl(out, TORCH_FN(compiled::name##_out));

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // torch._foreach_* over pointwise ops: one stream task per call (foreach_ops.h).
  compiled::register_foreach_ops(m);
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

#undef KILN_IMPL_BINARY

}  // namespace kiln::torch_integration
