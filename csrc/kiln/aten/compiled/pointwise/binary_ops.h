// Compiled binary and comparison ops: functional, in-place and out= forms.
// Registered in aten/compiled/pointwise/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

#define KILN_DECLARE_BINARY_WITH_ALPHA(name)                                                   \
  at::Tensor name(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha);  \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha);    \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha, \
                         at::Tensor& out);
#define KILN_DECLARE_BINARY(name)                                    \
  at::Tensor name(const at::Tensor& self, const at::Tensor& other);  \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& other);    \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out);

KILN_DECLARE_BINARY_WITH_ALPHA(add)
KILN_DECLARE_BINARY_WITH_ALPHA(sub)
KILN_DECLARE_BINARY(mul)
KILN_DECLARE_BINARY(div)
KILN_DECLARE_BINARY(remainder)
KILN_DECLARE_BINARY(fmod)
KILN_DECLARE_BINARY(floor_divide)
KILN_DECLARE_BINARY(pow)
KILN_DECLARE_BINARY(atan2)
KILN_DECLARE_BINARY(copysign)
KILN_DECLARE_BINARY(hypot)
KILN_DECLARE_BINARY(maximum)
KILN_DECLARE_BINARY(minimum)
KILN_DECLARE_BINARY(bitwise_and)
KILN_DECLARE_BINARY(bitwise_or)
KILN_DECLARE_BINARY(bitwise_xor)
KILN_DECLARE_BINARY(bitwise_left_shift)
KILN_DECLARE_BINARY(bitwise_right_shift)
KILN_DECLARE_BINARY(eq)
KILN_DECLARE_BINARY(ne)
KILN_DECLARE_BINARY(lt)
KILN_DECLARE_BINARY(le)
KILN_DECLARE_BINARY(gt)
KILN_DECLARE_BINARY(ge)
KILN_DECLARE_BINARY(logical_and)
KILN_DECLARE_BINARY(logical_or)
KILN_DECLARE_BINARY(logical_xor)

#define KILN_DECLARE_COMPARISON_SCALAR(name)                                                    \
  at::Tensor name##_scalar(const at::Tensor& self, const c10::Scalar& other);                   \
  at::Tensor& name##_scalar_(at::Tensor& self, const c10::Scalar& other);                       \
  at::Tensor& name##_scalar_out(const at::Tensor& self, const c10::Scalar& other, at::Tensor& out);

KILN_DECLARE_COMPARISON_SCALAR(eq)
KILN_DECLARE_COMPARISON_SCALAR(ne)
KILN_DECLARE_COMPARISON_SCALAR(lt)
KILN_DECLARE_COMPARISON_SCALAR(le)
KILN_DECLARE_COMPARISON_SCALAR(gt)
KILN_DECLARE_COMPARISON_SCALAR(ge)

#undef KILN_DECLARE_COMPARISON_SCALAR

at::Tensor remainder_scalar_tensor(const c10::Scalar& self, const at::Tensor& other);

#define KILN_DECLARE_SHIFT_OPERATOR(name, inplace_name)                                  \
  at::Tensor name##_tensor(const at::Tensor& self, const at::Tensor& other);              \
  at::Tensor name##_scalar(const at::Tensor& self, const c10::Scalar& other);             \
  at::Tensor& inplace_name##_tensor(at::Tensor& self, const at::Tensor& other);           \
  at::Tensor& inplace_name##_scalar(at::Tensor& self, const c10::Scalar& other);

KILN_DECLARE_SHIFT_OPERATOR(lshift, ilshift)
KILN_DECLARE_SHIFT_OPERATOR(rshift, irshift)

#undef KILN_DECLARE_SHIFT_OPERATOR

at::Tensor div_mode(const at::Tensor& self, const at::Tensor& other,
                    std::optional<c10::string_view> rounding_mode);
at::Tensor& div_mode_(at::Tensor& self, const at::Tensor& other,
                      std::optional<c10::string_view> rounding_mode);
at::Tensor& div_mode_out(const at::Tensor& self, const at::Tensor& other,
                         std::optional<c10::string_view> rounding_mode, at::Tensor& out);

#undef KILN_DECLARE_BINARY
#undef KILN_DECLARE_BINARY_WITH_ALPHA

}  // namespace kiln::torch_integration::compiled
