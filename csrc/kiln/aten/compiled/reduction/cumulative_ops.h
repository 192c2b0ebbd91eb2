// Compiled running scans that the log-step scans of scan_ops.h cannot
// express: cummax/cummin (a running extreme with its index) and
// logcumsumexp. Each is a row kernel (row_kernel.h) walking a row in order,
// with the CPU's loop semantics:
//   cummax/cummin  the index is the latest position holding the extreme
//                  (ties move it forward); NaN beats every number, and
//                  each later NaN takes the index;
//   logcumsumexp   accumulates in ATen's CPU accumulate type (float64 for
//                  float32/float64, float32 for the half types), combining
//                  with log1p(exp(min - max)) + max, and rounds each output.
// Registered in aten/compiled/sort/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

void cummax_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim);
void cummin_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim);
at::Tensor logcumsumexp(const at::Tensor& self, int64_t dim);
at::Tensor& logcumsumexp_out(const at::Tensor& self, int64_t dim, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
