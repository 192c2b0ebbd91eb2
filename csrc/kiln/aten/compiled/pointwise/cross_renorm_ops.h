// Compiled small composites over one dim: linalg_cross (torch.cross
// decomposes into it) and renorm. Registered in
// aten/compiled/pointwise/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

at::Tensor linalg_cross(const at::Tensor& self, const at::Tensor& other, int64_t dim);
at::Tensor& linalg_cross_out(const at::Tensor& self, const at::Tensor& other, int64_t dim,
                             at::Tensor& out);

// renorm: each slice along `dim` whose p-norm exceeds maxnorm is scaled down
// to maxnorm. The norms come from kiln's linalg_vector_norm, the scale from a
// pointwise kernel and the product from kiln's mul.
at::Tensor renorm(const at::Tensor& self, const c10::Scalar& p, int64_t dim,
                  const c10::Scalar& maxnorm);
at::Tensor& renorm_(at::Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm);
at::Tensor& renorm_out(const at::Tensor& self, const c10::Scalar& p, int64_t dim,
                       const c10::Scalar& maxnorm, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
