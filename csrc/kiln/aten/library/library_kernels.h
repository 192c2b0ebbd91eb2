// Library kernels: the op families a GPU backend hands to vendor libraries
// (cuBLAS for the matmul family), run by PyTorch's own CPU libraries (MKL,
// oneDNN, OpenBLAS) on aliases of kiln device memory, queued on the stream.
// Each records itself in op tracking under the path "library".
//
// Shapes, dtypes and devices are checked in the caller, with PyTorch's
// messages, before anything is queued, so a bad call raises at once and
// leaves its inputs and output untouched.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

namespace kiln::torch_integration::library {

at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out);
at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                      const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out);
at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out);
at::Tensor& baddbmm_out(const at::Tensor& self, const at::Tensor& batch1,
                        const at::Tensor& batch2, const c10::Scalar& beta,
                        const c10::Scalar& alpha, at::Tensor& out);

}  // namespace kiln::torch_integration::library
