// The special-function family's registration table: digamma and polygamma
// (lgamma's and digamma's backward), erfinv, the Bessel and Airy functions,
// ndtri, log_ndtr, erfcx, zeta, igamma/igammac and the orthogonal
// polynomials. Kernels live in compiled/special_ops.cc.
//
// The Scalar overloads of zeta and the polynomials (x_scalar, n_scalar) and
// the torch.special aliases (special_digamma, special_polygamma, special_i0,
// special_erfinv, ...) are composites over these, and polygamma_ calls
// polygamma.out, so they are left alone.
#include <torch/library.h>

#include "kiln/aten/compiled/special_ops.h"

namespace kiln::torch_integration {

#define KILN_IMPL_SPECIAL(m, name)                       \
  m.impl(#name, TORCH_FN(compiled::name));               \
  m.impl(#name ".out", TORCH_FN(compiled::name##_out));
#define KILN_IMPL_SPECIAL_IN_PLACE(m, name)              \
  KILN_IMPL_SPECIAL(m, name)                             \
  m.impl(#name "_", TORCH_FN(compiled::name##_));

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  KILN_IMPL_SPECIAL_IN_PLACE(m, digamma)
  KILN_IMPL_SPECIAL_IN_PLACE(m, erfinv)
  KILN_IMPL_SPECIAL_IN_PLACE(m, i0)
  KILN_IMPL_SPECIAL(m, special_i0e)
  KILN_IMPL_SPECIAL(m, special_i1)
  KILN_IMPL_SPECIAL(m, special_i1e)
  KILN_IMPL_SPECIAL(m, special_ndtri)
  KILN_IMPL_SPECIAL(m, special_log_ndtr)
  KILN_IMPL_SPECIAL(m, special_erfcx)
  KILN_IMPL_SPECIAL(m, special_bessel_j0)
  KILN_IMPL_SPECIAL(m, special_bessel_j1)
  KILN_IMPL_SPECIAL(m, special_bessel_y0)
  KILN_IMPL_SPECIAL(m, special_bessel_y1)
  KILN_IMPL_SPECIAL(m, special_modified_bessel_i0)
  KILN_IMPL_SPECIAL(m, special_modified_bessel_i1)
  KILN_IMPL_SPECIAL(m, special_modified_bessel_k0)
  KILN_IMPL_SPECIAL(m, special_modified_bessel_k1)
  KILN_IMPL_SPECIAL(m, special_scaled_modified_bessel_k0)
  KILN_IMPL_SPECIAL(m, special_scaled_modified_bessel_k1)
  KILN_IMPL_SPECIAL(m, special_spherical_bessel_j0)
  KILN_IMPL_SPECIAL(m, special_airy_ai)
  KILN_IMPL_SPECIAL(m, special_zeta)
  KILN_IMPL_SPECIAL_IN_PLACE(m, igamma)
  KILN_IMPL_SPECIAL_IN_PLACE(m, igammac)
  KILN_IMPL_SPECIAL(m, special_chebyshev_polynomial_t)
  KILN_IMPL_SPECIAL(m, special_chebyshev_polynomial_u)
  KILN_IMPL_SPECIAL(m, special_chebyshev_polynomial_v)
  KILN_IMPL_SPECIAL(m, special_chebyshev_polynomial_w)
  KILN_IMPL_SPECIAL(m, special_shifted_chebyshev_polynomial_t)
  KILN_IMPL_SPECIAL(m, special_shifted_chebyshev_polynomial_u)
  KILN_IMPL_SPECIAL(m, special_shifted_chebyshev_polynomial_v)
  KILN_IMPL_SPECIAL(m, special_shifted_chebyshev_polynomial_w)
  KILN_IMPL_SPECIAL(m, special_hermite_polynomial_h)
  KILN_IMPL_SPECIAL(m, special_hermite_polynomial_he)
  KILN_IMPL_SPECIAL(m, special_laguerre_polynomial_l)
  KILN_IMPL_SPECIAL(m, special_legendre_polynomial_p)
  m.impl("polygamma", TORCH_FN(compiled::polygamma));
  m.impl("polygamma.out", TORCH_FN(compiled::polygamma_out));
}

#undef KILN_IMPL_SPECIAL
#undef KILN_IMPL_SPECIAL_IN_PLACE

}  // namespace kiln::torch_integration
