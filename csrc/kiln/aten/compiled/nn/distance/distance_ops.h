// Compiled p-norm distances: _cdist_forward, _cdist_backward, _pdist_forward,
// _pdist_backward (what torch.cdist and torch.pdist reach). Registered in
// aten/compiled/nn/loss/registration.cc.
//
// As ATen's CPU kernels, by the norm p: 0 counts the differing columns, 1
// sums |x - y|, 2 is the square root of the summed squares, infinity the
// largest |x - y|, any other p (sum |x - y|^p)^(1/p). A forward distance is one
// compiled reduction over the columns of the broadcast pair (x1 row i, x2 row
// j), with the root in its epilogue; the cdist gradient of x1 row i is one
// compiled reduction over j of the CPU's per-column derivative. For p = 2 and
// more than 25 rows (compute_mode 0) or compute_mode 1, _cdist_forward takes
// the CPU's matrix-product formula (_euclidean_dist, whose ops run on kiln).
// pdist pairs the rows i < j in the CPU's order; its gradient adds each
// pair's derivative to row i and subtracts it from row j (compiled index_add).
// Float32 and float64 only, as the CPU's kernels.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace kiln::torch_integration::compiled {

at::Tensor cdist_forward(const at::Tensor& x1, const at::Tensor& x2, double p,
                         std::optional<int64_t> compute_mode);
at::Tensor cdist_backward(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2,
                          double p, const at::Tensor& cdist);
at::Tensor pdist_forward(const at::Tensor& self, double p);
at::Tensor pdist_backward(const at::Tensor& grad, const at::Tensor& self, double p,
                          const at::Tensor& pdist);

}  // namespace kiln::torch_integration::compiled
