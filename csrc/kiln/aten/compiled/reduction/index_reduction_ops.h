// Compiled reductions that select an element: max and min (of everything, or
// along a dim with the index of the value), argmax, argmin and aminmax.
// Registered in aten/compiled/reduction/registration.cc.
//
// As on the CPU: NaN wins (the first NaN, for indices), and among equal
// values the first index wins. argmax/argmin without a dim index the tensor
// flattened in its logical (row-major) order, whatever its strides.
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor max(const at::Tensor& self);
at::Tensor& max_unary_out(const at::Tensor& self, at::Tensor& out);
at::Tensor min(const at::Tensor& self);
at::Tensor& min_unary_out(const at::Tensor& self, at::Tensor& out);

std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim);
std::tuple<at::Tensor&, at::Tensor&> max_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices);
std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor& self, int64_t dim, bool keepdim);
std::tuple<at::Tensor&, at::Tensor&> min_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices);

at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim);
at::Tensor& argmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       at::Tensor& out);
at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim);
at::Tensor& argmin_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       at::Tensor& out);

std::tuple<at::Tensor, at::Tensor> aminmax(const at::Tensor& self, std::optional<int64_t> dim,
                                           bool keepdim);
std::tuple<at::Tensor&, at::Tensor&> aminmax_out(const at::Tensor& self, std::optional<int64_t> dim,
                                                 bool keepdim, at::Tensor& min, at::Tensor& max);

}  // namespace kiln::torch_integration::compiled
