// What the pointwise op families (unary, clamp, ternary, power, activation,
// factory) share on top of launch_pointwise: the dtypes each op's CPU kernel
// covers, scalars converted the way ATen's kernels convert them, and a launch
// that rounds a half-precision result before storing it into a wider out=
// tensor.
#pragma once

#include <ATen/TensorIterator.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "kiln/aten/compiled/launch/pointwise.h"

namespace kiln::torch_integration::compiled {

// A set of ATen dtypes, as AT_DISPATCH groups them.
class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<c10::ScalarType> types) {
    for (c10::ScalarType type : types) bits_ |= bit(type);
  }
  constexpr bool contains(c10::ScalarType type) const { return (bits_ & bit(type)) != 0; }
  constexpr DTypeSet operator|(DTypeSet other) const {
    DTypeSet result;
    result.bits_ = bits_ | other.bits_;
    return result;
  }

 private:
  static constexpr uint64_t bit(c10::ScalarType type) {
    return uint64_t{1} << static_cast<int>(type);
  }
  uint64_t bits_ = 0;
};

inline constexpr DTypeSet kBoolType{c10::ScalarType::Bool};
inline constexpr DTypeSet kIntegralTypes{c10::ScalarType::Byte, c10::ScalarType::Char,
                                         c10::ScalarType::Short, c10::ScalarType::Int,
                                         c10::ScalarType::Long};
inline constexpr DTypeSet kFloatingTypes{c10::ScalarType::Half, c10::ScalarType::BFloat16,
                                         c10::ScalarType::Float, c10::ScalarType::Double};
inline constexpr DTypeSet kNumericTypes = kIntegralTypes | kFloatingTypes;
inline constexpr DTypeSet kAllTypes = kNumericTypes | kBoolType;
// The CPU kernels that take no half types: ctc and margin losses, the
// distances, most torch.special functions.
inline constexpr DTypeSet kFloatAndDoubleTypes{c10::ScalarType::Float, c10::ScalarType::Double};

// Raises the NotImplementedError ATen's dispatch macros raise ("\"name\" not
// implemented for 'Bool'") unless `allowed` covers `type`.
void check_dispatch_dtype(const char* name, c10::ScalarType type, DTypeSet allowed);

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
