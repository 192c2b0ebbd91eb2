// Compiled special functions: digamma and polygamma, erfinv, the Bessel
// family (i0, i0e, i1, i1e, J, Y, modified I and K, spherical j0), Airy Ai,
// ndtri, log_ndtr, erfcx, the Hurwitz zeta, the regularized incomplete gamma
// functions and the orthogonal polynomials of torch.special. Functional,
// in-place (where ATen has one) and out= forms; registered in
// aten/compiled/pointwise/registration.cc. The math is C in the kernel prelude
// (compiler/codegen/special_prelude*.cc).
//
// Every op is structured: ATen's meta function promotes integer and bool
// inputs to the default float dtype (igamma and igammac keep them, and their
// CPU kernels refuse them) and raises the CPU's errors; each op then accepts
// the dtypes its CPU kernel dispatches over and raises NotImplementedError
// for the others, as the CPU does. Half types compute in float32.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kiln::torch_integration::compiled {

#define KILN_DECLARE_SPECIAL_UNARY(name)  \
  at::Tensor name(const at::Tensor& self); \
  at::Tensor& name##_out(const at::Tensor& self, at::Tensor& out);
#define KILN_DECLARE_SPECIAL_UNARY_IN_PLACE(name) \
  KILN_DECLARE_SPECIAL_UNARY(name)                \
  at::Tensor& name##_(at::Tensor& self);
#define KILN_DECLARE_SPECIAL_BINARY(name)                              \
  at::Tensor name(const at::Tensor& self, const at::Tensor& other);    \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out);
#define KILN_DECLARE_SPECIAL_BINARY_IN_PLACE(name) \
  KILN_DECLARE_SPECIAL_BINARY(name)                \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& other);

KILN_DECLARE_SPECIAL_UNARY_IN_PLACE(digamma)
KILN_DECLARE_SPECIAL_UNARY_IN_PLACE(erfinv)
KILN_DECLARE_SPECIAL_UNARY_IN_PLACE(i0)
KILN_DECLARE_SPECIAL_UNARY(special_i0e)
KILN_DECLARE_SPECIAL_UNARY(special_i1)
KILN_DECLARE_SPECIAL_UNARY(special_i1e)
KILN_DECLARE_SPECIAL_UNARY(special_ndtri)
KILN_DECLARE_SPECIAL_UNARY(special_log_ndtr)
KILN_DECLARE_SPECIAL_UNARY(special_erfcx)
KILN_DECLARE_SPECIAL_UNARY(special_bessel_j0)
KILN_DECLARE_SPECIAL_UNARY(special_bessel_j1)
KILN_DECLARE_SPECIAL_UNARY(special_bessel_y0)
KILN_DECLARE_SPECIAL_UNARY(special_bessel_y1)
KILN_DECLARE_SPECIAL_UNARY(special_modified_bessel_i0)
KILN_DECLARE_SPECIAL_UNARY(special_modified_bessel_i1)
KILN_DECLARE_SPECIAL_UNARY(special_modified_bessel_k0)
KILN_DECLARE_SPECIAL_UNARY(special_modified_bessel_k1)
KILN_DECLARE_SPECIAL_UNARY(special_scaled_modified_bessel_k0)
KILN_DECLARE_SPECIAL_UNARY(special_scaled_modified_bessel_k1)
KILN_DECLARE_SPECIAL_UNARY(special_spherical_bessel_j0)
KILN_DECLARE_SPECIAL_UNARY(special_airy_ai)

KILN_DECLARE_SPECIAL_BINARY(special_zeta)
KILN_DECLARE_SPECIAL_BINARY_IN_PLACE(igamma)
KILN_DECLARE_SPECIAL_BINARY_IN_PLACE(igammac)
// Polynomials: (x, n), n truncated toward zero.
KILN_DECLARE_SPECIAL_BINARY(special_chebyshev_polynomial_t)
KILN_DECLARE_SPECIAL_BINARY(special_chebyshev_polynomial_u)
KILN_DECLARE_SPECIAL_BINARY(special_chebyshev_polynomial_v)
KILN_DECLARE_SPECIAL_BINARY(special_chebyshev_polynomial_w)
KILN_DECLARE_SPECIAL_BINARY(special_shifted_chebyshev_polynomial_t)
KILN_DECLARE_SPECIAL_BINARY(special_shifted_chebyshev_polynomial_u)
KILN_DECLARE_SPECIAL_BINARY(special_shifted_chebyshev_polynomial_v)
KILN_DECLARE_SPECIAL_BINARY(special_shifted_chebyshev_polynomial_w)
KILN_DECLARE_SPECIAL_BINARY(special_hermite_polynomial_h)
KILN_DECLARE_SPECIAL_BINARY(special_hermite_polynomial_he)
KILN_DECLARE_SPECIAL_BINARY(special_laguerre_polynomial_l)
KILN_DECLARE_SPECIAL_BINARY(special_legendre_polynomial_p)

#undef KILN_DECLARE_SPECIAL_UNARY
#undef KILN_DECLARE_SPECIAL_UNARY_IN_PLACE
#undef KILN_DECLARE_SPECIAL_BINARY
#undef KILN_DECLARE_SPECIAL_BINARY_IN_PLACE

// polygamma(n, x): the n-th derivative of digamma; n is a launch scalar, so
// every order shares one kernel per dtype. Negative n raises (meta function).
at::Tensor polygamma(int64_t n, const at::Tensor& self);
at::Tensor& polygamma_out(int64_t n, const at::Tensor& self, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
