// Compiled ternary and scalar-weighted ops: where, lerp, addcmul, addcdiv,
// masked_fill. Registered in aten/compiled/pointwise/registration.cc.
//
// - where(condition, self, other): condition bool (uint8 warns and is read as
//   bool, as on the CPU); self and other promote to their result type; 0-dim
//   CPU tensors (Python numbers) become launch scalars, so where(c, x, 0.0)
//   needs neither a copy to the device nor a new kernel per value.
// - lerp: self + weight * (end - self) for |weight| < 0.5, else
//   end - (end - self) * (1 - weight), in the opmath type, as ATen computes it.
// - addcmul / addcdiv: self + value * t1 * t2 and self + value * t1 / t2.
// - masked_fill: the value is converted with ATen's overflow checks; a value
//   tensor on the device is read by the kernel, not by the host.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

namespace kiln::torch_integration::compiled {

at::Tensor where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other);
at::Tensor& where_out(const at::Tensor& condition, const at::Tensor& self,
                      const at::Tensor& other, at::Tensor& out);

at::Tensor lerp_scalar(const at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight);
at::Tensor& lerp_scalar_(at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight);
at::Tensor& lerp_scalar_out(const at::Tensor& self, const at::Tensor& end,
                            const c10::Scalar& weight, at::Tensor& out);
at::Tensor lerp_tensor(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight);
at::Tensor& lerp_tensor_(at::Tensor& self, const at::Tensor& end, const at::Tensor& weight);
at::Tensor& lerp_tensor_out(const at::Tensor& self, const at::Tensor& end,
                            const at::Tensor& weight, at::Tensor& out);

#define KILN_DECLARE_POINTWISE_SCALED(name)                                                    \
  at::Tensor name(const at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2, \
                  const c10::Scalar& value);                                                   \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2,   \
                      const c10::Scalar& value);                                               \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& tensor1,                     \
                         const at::Tensor& tensor2, const c10::Scalar& value, at::Tensor& out);

KILN_DECLARE_POINTWISE_SCALED(addcmul)
KILN_DECLARE_POINTWISE_SCALED(addcdiv)

#undef KILN_DECLARE_POINTWISE_SCALED

at::Tensor masked_fill_scalar(const at::Tensor& self, const at::Tensor& mask,
                              const c10::Scalar& value);
at::Tensor& masked_fill_scalar_(at::Tensor& self, const at::Tensor& mask, const c10::Scalar& value);
at::Tensor masked_fill_tensor(const at::Tensor& self, const at::Tensor& mask,
                              const at::Tensor& value);
at::Tensor& masked_fill_tensor_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value);

}  // namespace kiln::torch_integration::compiled
