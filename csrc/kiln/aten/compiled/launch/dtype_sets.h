// The dtype sets of ATen's dispatch macros (AT_DISPATCH_FLOATING_TYPES and
// the rest), for ops that raise, as a CPU kernel raises, for a dtype its
// dispatch does not cover: pointwise ops, losses, distances. One
// place for them, so a set such as {float, double} is said once.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <initializer_list>

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

}  // namespace kiln::torch_integration::compiled
