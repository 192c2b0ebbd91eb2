// Matrix products handed straight to BLAS.
//
// The library path's matmul family otherwise runs ATen's CPU kernel on host
// aliases of the kiln tensors (matmul.cc): a dispatcher call, the structured
// kernel's checks, a TensorIterator copy of the bias into the output and four
// alias tensors, around a BLAS call that itself takes a few microseconds for
// the matrices of a small model. Here the same BLAS routine (the Fortran
// sgemm_ and dgemm_ that libtorch_cpu exports: MKL in PyTorch's wheels) is
// called on the kiln tensors' memory with the transposes ATen's CPU addmm
// would choose, after the bias is written into the output as ATen writes it,
// so the results of mm and addmm are ATen's bit for bit. (ATen's bmm runs
// products below 400 multiply-adds as plain loops and larger batches through
// MKL's batched gemm, so bmm's last bits can differ from the CPU's.)
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::library {

// Launches out = beta * bias + alpha * (a @ b) on out's stream, for a [m, k],
// b [k, n] and out [m, n] (mm, addmm), or the same with a leading batch dim
// (bmm, baddbmm), already checked (devices, shapes, dtypes; bias
// broadcastable to out, or null for mm and bmm, where beta is ignored).
// Returns false, launching nothing, when the product cannot go to BLAS
// directly: a dtype other than float32 and float64, a lazily conjugated or
// negated view, a matrix with no unit stride, an output that is not row-major
// or whose matrices overlap, an empty dim, sizes beyond BLAS's 32-bit
// integers, an output that shares memory with a or b, or no BLAS exported by
// the process. `small`: the call runs on the calling thread alone
// (library_threads.h); a larger one on the stream's worker is cut into blocks
// of output rows or columns (or whole matrices of a batch), one BLAS call
// each, over Kiln's pool and as many threads as torch.get_num_threads() gave
// the launching thread.
bool launch_direct_gemm(const char* name, const at::Tensor& a, const at::Tensor& b, const at::Tensor* bias,
                        double beta, double alpha, const at::Tensor& out, bool small);

// One product out = a @ b on raw memory, computed now on the calling thread by
// the same BLAS routine, for callers that queue their own work and cut it
// into products themselves (grouped_mm.cc: one product per group, or a block
// of one). a is [m, k], b [k, n], out [m, n]; strides are in elements, as
// {row stride, column stride}. Returns false, computing nothing, when BLAS
// cannot take the operands as they are: a dtype other than float32 and
// float64, no BLAS exported by the process, a matrix with no unit stride, an
// output that is not row-major, an empty dim (k == 0 leaves out to the
// caller), or sizes beyond BLAS's 32-bit integers. The caller runs it under
// the threading it chose (library_threads.h) and guarantees the memory.
struct MatrixStrides {
  int64_t row = 0;
  int64_t column = 0;
};
bool direct_gemm_product(at::ScalarType dtype, const void* a, MatrixStrides a_strides, const void* b,
                         MatrixStrides b_strides, void* out, MatrixStrides out_strides, int64_t m, int64_t n,
                         int64_t k);

}  // namespace kiln::torch_integration::library
