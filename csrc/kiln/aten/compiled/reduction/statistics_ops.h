// Compiled statistics over dims: var, std, var_mean, std_mean,
// linalg_vector_norm (and the older norm overloads, which ATen implements with
// it) and logsumexp. Registered in aten/compiled/reduction/registration.cc.
//
// var/std take two passes, both accumulating in float64: the mean, then the
// sum of squared deviations from it, divided by max(0, N - correction) (so
// N <= correction gives inf, or NaN for a zero sum, as on the CPU).
// logsumexp takes three kernels: the maximum (an infinite maximum counts as
// 0, as in ATen), the sum of exp(x - max), and log(sum) + max.
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor var(const at::Tensor& self, at::OptionalIntArrayRef dim,
               const std::optional<c10::Scalar>& correction, bool keepdim);
at::Tensor& var_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                    const std::optional<c10::Scalar>& correction, bool keepdim, at::Tensor& out);
at::Tensor std_dev(const at::Tensor& self, at::OptionalIntArrayRef dim,
               const std::optional<c10::Scalar>& correction, bool keepdim);
at::Tensor& std_dev_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                    const std::optional<c10::Scalar>& correction, bool keepdim, at::Tensor& out);
std::tuple<at::Tensor, at::Tensor> var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<c10::Scalar>& correction,
                                            bool keepdim);
std::tuple<at::Tensor, at::Tensor> std_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<c10::Scalar>& correction,
                                            bool keepdim);

at::Tensor linalg_vector_norm(const at::Tensor& self, const c10::Scalar& ord,
                              at::OptionalIntArrayRef dim, bool keepdim,
                              std::optional<at::ScalarType> dtype);
at::Tensor& linalg_vector_norm_out(const at::Tensor& self, const c10::Scalar& ord,
                                   at::OptionalIntArrayRef dim, bool keepdim,
                                   std::optional<at::ScalarType> dtype, at::Tensor& out);
at::Tensor norm(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim,
                bool keepdim);
at::Tensor& norm_out(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                     at::IntArrayRef dim, bool keepdim, at::Tensor& out);
at::Tensor norm_dtype(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                      at::IntArrayRef dim, bool keepdim, at::ScalarType dtype);
at::Tensor& norm_dtype_out(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                           at::IntArrayRef dim, bool keepdim, at::ScalarType dtype,
                           at::Tensor& out);

at::Tensor logsumexp(const at::Tensor& self, at::IntArrayRef dim, bool keepdim);
at::Tensor& logsumexp_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim,
                          at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
