// What the pointwise op families (unary, clamp, ternary, power, activation,
// factory) share on top of launch_pointwise: the dtype a CPU kernel
// dispatches on, scalars converted the way ATen's kernels convert them, and a
// launch that rounds a half-precision result before storing it into a wider
// out= tensor. The dtype sets each op's CPU kernel covers: dtype_sets.h.
#pragma once

#include <ATen/TensorIterator.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <string_view>

#include "kiln/aten/compiled/launch/pointwise.h"

namespace kiln::torch_integration::compiled {

// The dtype a CPU kernel dispatches on: the iterator's common dtype (the CPU
// computes into a temporary of that dtype when an out= tensor differs), else
// the output's.
c10::ScalarType dispatch_dtype(const at::TensorIteratorBase& iter);

// `value.to<scalar_t>()` for `type`'s C++ type, as a Scalar: the conversion a
// CPU kernel applies to its scalar arguments, with the same overflow checks
// and the same rounding to float16 or bfloat16.
c10::Scalar scalar_as(const c10::Scalar& value, c10::ScalarType type);
// The same in `type`'s opmath type (float for the half types): what kernels
// that compute half types in float convert their scalars to.
c10::Scalar scalar_as_opmath(const c10::Scalar& value, c10::ScalarType type);

// launch_pointwise, with each result rounded to the common dtype first when
// that is a half type and the output is wider: the CPU computes into a
// half-precision temporary and copies it out.
void launch_rounded(const char* op_name, std::string_view op_key, at::TensorIteratorBase& iter,
                    c10::ArrayRef<c10::Scalar> scalars, const PointwiseBody& body);

}  // namespace kiln::torch_integration::compiled
