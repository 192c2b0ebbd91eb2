// Compiled whole-tensor comparisons and products that reduce two tensors to
// one value: equal (what cov and corrcoef ask of their weights) and dot (what
// the chunked linear cross entropy composes). Registered in
// aten/registration_losses.cc.
//
// dot is one compiled sum of products, accumulated in the compute dtype
// (float for the half types, as the CPU's fp32-arithmetic dot). equal
// compares with the compiled eq and all and reads the answer back: it
// returns a Python bool, so it synchronizes, as on any device.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

bool equal(const at::Tensor& self, const at::Tensor& other);

at::Tensor dot(const at::Tensor& self, const at::Tensor& other);
at::Tensor& dot_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
