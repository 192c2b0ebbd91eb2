// max_unpool2d and max_unpool3d (max_unpool.cc), and the plane scatter behind
// them.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

// output[n, c][indices[n, c, ...]] = (or +=, when `accumulate`) self[n, c, ...]
// over (N, C, *output_size) planes (unbatched tensors too), one element at a
// time in self's row-major order; indices outside the plane write nothing
// (accumulating) or an unspecified element of the plane. Also the backward of
// 3-D max pooling.
void plane_scatter(const char* op_name, const at::Tensor& self, const at::Tensor& indices,
                   at::IntArrayRef output_size, const at::Tensor& output, bool accumulate);
at::Tensor max_unpool2d(const at::Tensor& self, const at::Tensor& indices,
                        at::IntArrayRef output_size);
at::Tensor& max_unpool2d_out(const at::Tensor& self, const at::Tensor& indices,
                             at::IntArrayRef output_size, at::Tensor& out);
at::Tensor max_unpool3d(const at::Tensor& self, const at::Tensor& indices,
                        at::IntArrayRef output_size, at::IntArrayRef stride,
                        at::IntArrayRef padding);
at::Tensor& max_unpool3d_out(const at::Tensor& self, const at::Tensor& indices,
                             at::IntArrayRef output_size, at::IntArrayRef stride,
                             at::IntArrayRef padding, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
