// DType: the element types Kiln IR computes with and stores.
//
// Storage and compute differ for the half types: float16 and bfloat16 are
// stored in 16 bits but every kernel computes in float32 and rounds once when
// it stores, as PyTorch's CPU kernels do.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln::ir {

enum class DType : uint8_t {
  kBool,
  kUInt8,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};
constexpr int kDTypeCount = 10;

// Short stable names used in printed IR and kernel signatures: "bool", "u8",
// "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64".
const char* dtype_name(DType dtype);
std::optional<DType> dtype_from_name(std::string_view name);

int dtype_size(DType dtype);  // bytes of storage
bool is_floating(DType dtype);
bool is_integer(DType dtype);  // excludes bool
bool is_signed(DType dtype);   // signed integer or floating
// The type arithmetic on `dtype` is done in: float32 for the half types, the
// type itself otherwise.
DType compute_dtype(DType dtype);

}  // namespace kiln::ir
