// Compiled inclusive scans: cumsum and cumprod (functional, out= and in-place).
// Registered in aten/compiled/reduction/registration.cc.
//
// Kiln IR has no scan, so a scan along `dim` is built from reductions and
// pointwise kernels, in blocks of 16 elements: one reduction computes every
// block's own inclusive scan (each position folds a window of 16 slots of a
// copy of its block padded with the identity), the block totals are scanned
// the same way (recursively, so log16(length) levels), and a pointwise kernel
// combines the two. Every kernel is parallel; the work is O(16 * numel)
// instead of a sequential scan's O(numel), and each level takes about six
// launches.
//
// Accumulation is in ATen's CPU accumulate type of the result dtype (float64
// for float32/float64, float32 for half types, int64 for integers), after the
// input is converted to the result dtype; each result is rounded once. The
// order of the additions differs from the CPU's left-to-right loop.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

at::Tensor cumsum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype);
at::Tensor& cumsum_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                       at::Tensor& out);
at::Tensor& cumsum_(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype);
at::Tensor cumprod(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype);
at::Tensor& cumprod_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                        at::Tensor& out);
at::Tensor& cumprod_(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype);

}  // namespace kiln::torch_integration::compiled
