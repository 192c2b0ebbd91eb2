// torch.complex and torch.polar into a complex tensor: kiln has no complex
// IR dtype, so the real and imaginary parts are computed by real kernels and
// copied into view_as_real(out). The functional forms are ATen composites of
// these out= forms. Registered in aten/compiled/pointwise/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

at::Tensor& complex_out(const at::Tensor& real, const at::Tensor& imag, at::Tensor& out);
at::Tensor& polar_out(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
