// conj_physical.out on kiln: the conjugate, materialized. The inverse
// Hermitian FFTs (fft.ihfft2, fft.ihfftn) end with it. Compiled kernels do
// not cover complex dtypes, but a complex tensor is a real one with a last
// dim of 2 (view_as_real), so the conjugate is a copy followed by a compiled
// negation of the imaginary parts.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

at::Tensor& conj_physical_out(const at::Tensor& self, at::Tensor& out);
// In place. ATen's own conj_physical_ calls a CPU/CUDA kernel stub directly,
// which has no kiln kernel (it raised an internal assert).
at::Tensor& conj_physical_(at::Tensor& self);

}  // namespace kiln::torch_integration::compiled
