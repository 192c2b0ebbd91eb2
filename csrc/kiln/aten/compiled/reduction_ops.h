// Compiled reductions over dims: sum, mean, amax, amin. Registered in
// aten/registration_reductions.cc.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
               std::optional<at::ScalarType> dtype);
at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, at::Tensor& out);
at::Tensor mean(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                std::optional<at::ScalarType> dtype);
at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<at::ScalarType> dtype, at::Tensor& out);
at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim);
at::Tensor& amax_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out);
at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim);
at::Tensor& amin_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
