// Compiled folding reductions: sum, mean, prod, nansum, count_nonzero, amax,
// amin, any, all. Registered in aten/compiled/reduction/registration.cc.
//
// Shapes, dtypes and argument errors are ATen's (its structured meta functions
// where the op has one). The input is converted to the output dtype before it
// is folded, as ATen's CPU reductions do; accumulation is in that dtype's
// compute dtype (float32 for half types), rounded once on store.
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
at::Tensor prod(const at::Tensor& self, std::optional<at::ScalarType> dtype);
at::Tensor prod_dim(const at::Tensor& self, int64_t dim, bool keepdim,
                    std::optional<at::ScalarType> dtype);
at::Tensor& prod_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                         std::optional<at::ScalarType> dtype, at::Tensor& out);
at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype);
at::Tensor& nansum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, at::Tensor& out);
at::Tensor count_nonzero(const at::Tensor& self, at::IntArrayRef dim);
at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim);
at::Tensor& amax_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out);
at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim);
at::Tensor& amin_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out);

// any and all: bool results, or uint8 for uint8 input (or a uint8 out=).
at::Tensor any(const at::Tensor& self);
at::Tensor& any_out(const at::Tensor& self, at::Tensor& out);
at::Tensor any_dim(const at::Tensor& self, int64_t dim, bool keepdim);
at::Tensor& any_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out);
at::Tensor any_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim);
at::Tensor& any_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                         at::Tensor& out);
at::Tensor all(const at::Tensor& self);
at::Tensor& all_out(const at::Tensor& self, at::Tensor& out);
at::Tensor all_dim(const at::Tensor& self, int64_t dim, bool keepdim);
at::Tensor& all_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out);
at::Tensor all_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim);
at::Tensor& all_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                         at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
