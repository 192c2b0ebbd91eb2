// Compiled clamp, clamp_min and clamp_max with Scalar or Tensor bounds:
// functional, in-place and out= forms, registered in
// aten/compiled/pointwise/registration.cc. relu and hardtanh (activation_ops.h) are
// clamps too.
//
// As on the CPU: a NaN input stays NaN, a NaN bound makes every element NaN,
// Scalar bounds take part in type promotion only for integer and bool inputs
// (and are converted to the result dtype with ATen's overflow checks), and
// min > max yields max.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include <optional>

namespace kiln::torch_integration::compiled {

at::Tensor clamp(const at::Tensor& self, const std::optional<c10::Scalar>& min,
                 const std::optional<c10::Scalar>& max);
at::Tensor& clamp_(at::Tensor& self, const std::optional<c10::Scalar>& min,
                   const std::optional<c10::Scalar>& max);
at::Tensor& clamp_out(const at::Tensor& self, const std::optional<c10::Scalar>& min,
                      const std::optional<c10::Scalar>& max, at::Tensor& out);

at::Tensor clamp_tensor(const at::Tensor& self, const std::optional<at::Tensor>& min,
                        const std::optional<at::Tensor>& max);
at::Tensor& clamp_tensor_(at::Tensor& self, const std::optional<at::Tensor>& min,
                          const std::optional<at::Tensor>& max);
at::Tensor& clamp_tensor_out(const at::Tensor& self, const std::optional<at::Tensor>& min,
                             const std::optional<at::Tensor>& max, at::Tensor& out);

#define KILN_DECLARE_CLAMP_BOUND(name)                                                         \
  at::Tensor name(const at::Tensor& self, const c10::Scalar& bound);                           \
  at::Tensor& name##_(at::Tensor& self, const c10::Scalar& bound);                             \
  at::Tensor& name##_out(const at::Tensor& self, const c10::Scalar& bound, at::Tensor& out);  \
  at::Tensor name##_tensor(const at::Tensor& self, const at::Tensor& bound);                   \
  at::Tensor& name##_tensor_(at::Tensor& self, const at::Tensor& bound);                       \
  at::Tensor& name##_tensor_out(const at::Tensor& self, const at::Tensor& bound, at::Tensor& out);

KILN_DECLARE_CLAMP_BOUND(clamp_min)
KILN_DECLARE_CLAMP_BOUND(clamp_max)

#undef KILN_DECLARE_CLAMP_BOUND

// For relu and hardtanh: clamp_min / clamp with Scalar bounds under another
// op name, into a new tensor (`out` undefined), `self` (in_place) or `out`.
at::Tensor clamp_min_as(const char* op_name, const at::Tensor& self, const c10::Scalar& min,
                        const at::Tensor& out, bool in_place);
at::Tensor clamp_as(const char* op_name, const at::Tensor& self, const c10::Scalar& min,
                    const c10::Scalar& max, const at::Tensor& out, bool in_place);

}  // namespace kiln::torch_integration::compiled
