// Compiled binary ops beyond arithmetic and comparison: NaN-ignoring max/min
// (fmax, fmin), rsub, heaviside, logaddexp/logaddexp2, xlogy/xlog1py, nextafter, and
// equal (a whole-tensor comparison returning a bool). Functional, in-place and
// out= forms where ATen has them. Registered in
// aten/compiled/pointwise/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

#define KILN_DECLARE_BINARY_EXTRA(name)                             \
  at::Tensor name(const at::Tensor& self, const at::Tensor& other); \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out);
#define KILN_DECLARE_BINARY_EXTRA_INPLACE(name) \
  KILN_DECLARE_BINARY_EXTRA(name)               \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& other);

KILN_DECLARE_BINARY_EXTRA(fmax)
KILN_DECLARE_BINARY_EXTRA(fmin)
KILN_DECLARE_BINARY_EXTRA(logaddexp)
KILN_DECLARE_BINARY_EXTRA(logaddexp2)
KILN_DECLARE_BINARY_EXTRA(special_xlog1py)
KILN_DECLARE_BINARY_EXTRA_INPLACE(heaviside)
KILN_DECLARE_BINARY_EXTRA_INPLACE(xlogy)
KILN_DECLARE_BINARY_EXTRA_INPLACE(nextafter)

#undef KILN_DECLARE_BINARY_EXTRA_INPLACE
#undef KILN_DECLARE_BINARY_EXTRA

// other - alpha * self: sub with its operands swapped, as the CPU's rsub is.
at::Tensor rsub(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha);

// torch.equal: same sizes and every element equal after type promotion (NaN
// is never equal). Waits for the comparison: the answer is a host bool.
bool equal(const at::Tensor& self, const at::Tensor& other);

}  // namespace kiln::torch_integration::compiled
