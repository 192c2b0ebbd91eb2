// Compiled factories and fills: arange, linspace, logspace, eye, tril, triu, and the
// strided fill behind fill_ (native/fill.cc keeps dense fills, which are a
// memset-like loop). Registered in aten/compiled/pointwise/registration.cc; full,
// zeros, ones and *_like are composites over empty and fill_.
//
// Values follow ATen's CPU kernels:
//   - arange: start + step * i in the accumulate type (double for float32 and
//     float64, float for the half types, int64 for integers); the size and its
//     checks as ATen computes them;
//   - linspace: start + step * i for the first half and end - step * (n-1-i)
//     for the second; integers in double, float16/bfloat16 with each operation
//     rounded to the half type, as c10::Half arithmetic rounds;
//   - logspace: start and end in the dtype, then step, exponent and
//     base ** exponent in double, converted once at the store;
//   - eye, tril, triu: one pass over the output (eye writes its zeros too).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

namespace kiln::torch_integration::compiled {

// Fills `self` (any strides) with `value` converted to self's dtype as fill_
// converts it (value.to<scalar_t>(), which raises on overflow). `op_name` is a
// string literal.
void fill_strided(const at::Tensor& self, const c10::Scalar& value, const char* op_name);
// Whether fill_strided covers `self`'s dtype.
bool fill_strided_covers(const at::Tensor& self);

at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step,
                       at::Tensor& out);
at::Tensor& linspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps,
                         at::Tensor& out);
at::Tensor& logspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps,
                         double base, at::Tensor& out);
at::Tensor& eye_out(int64_t n, at::Tensor& out);
at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out);

#define KILN_DECLARE_TRIANGLE(name)                                                     \
  at::Tensor name(const at::Tensor& self, int64_t diagonal);                            \
  at::Tensor& name##_(at::Tensor& self, int64_t diagonal);                              \
  at::Tensor& name##_out(const at::Tensor& self, int64_t diagonal, at::Tensor& out);

KILN_DECLARE_TRIANGLE(tril)
KILN_DECLARE_TRIANGLE(triu)

#undef KILN_DECLARE_TRIANGLE

}  // namespace kiln::torch_integration::compiled
