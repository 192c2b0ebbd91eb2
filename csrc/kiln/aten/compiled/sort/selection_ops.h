// Compiled selection ops: topk, kthvalue, median/nanmedian (all and along a
// dim) and mode, as row kernels (row_kernel.h, selection_source.h) that pick
// the same element (and index) as the CPU among equal values.
// Registered in aten/compiled/sort/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& self, int64_t k, int64_t dim, bool largest,
                                        bool sorted);
std::tuple<at::Tensor&, at::Tensor&> topk_out(const at::Tensor& self, int64_t k, int64_t dim, bool largest,
                                              bool sorted, at::Tensor& values, at::Tensor& indices);
std::tuple<at::Tensor&, at::Tensor&> kthvalue_out(const at::Tensor& self, int64_t k, int64_t dim,
                                                  bool keepdim, at::Tensor& values, at::Tensor& indices);
at::Tensor median(const at::Tensor& self);
at::Tensor nanmedian(const at::Tensor& self);
std::tuple<at::Tensor&, at::Tensor&> median_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                    at::Tensor& values, at::Tensor& indices);
std::tuple<at::Tensor&, at::Tensor&> nanmedian_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                       at::Tensor& values, at::Tensor& indices);
std::tuple<at::Tensor, at::Tensor> mode(const at::Tensor& self, int64_t dim, bool keepdim);
std::tuple<at::Tensor&, at::Tensor&> mode_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                              at::Tensor& values, at::Tensor& indices);

}  // namespace kiln::torch_integration::compiled
