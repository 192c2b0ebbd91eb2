// hash_tensor on kiln: the XOR of every element's 64-bit pattern (floating
// values widened to float64, integers and bools to int64), over the given
// dims, as a uint64 tensor. Registered in aten/compiled/nn/loss/registration.cc.
//
// ATen's own meta function checks the dims and shapes the output. The XOR
// runs as a fold of the reduced elements (moved to one last dim) in halves
// through the compiled bitwise_xor, log2(n) launches: the IR has no XOR
// reduction, and XOR's order does not change its result.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

at::Tensor hash_tensor(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode);
at::Tensor& hash_tensor_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim,
                            int64_t mode, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
