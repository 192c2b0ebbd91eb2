// DType: the element types Kiln IR computes with and stores.
//
// The bottom of the IR layer (below the torch line): kernel.h, graph.h and
// everything above speak of element types through it; the torch side maps
// at::ScalarType onto it.
//
// Storage and compute differ for the half types: float16 and bfloat16 are
// stored in 16 bits but every kernel computes in float32 and rounds once when
// it stores, as PyTorch's CPU kernels do.
//
// Thread-safety: pure functions over a constant table; safe from any thread.
// Errors: none reported. A DType outside the enum (a cast from a bad integer)
// indexes past the table: undefined, so check with kDTypeCount first.
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
// "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64". The returned
// string is static (lives for the process).
const char* dtype_name(DType dtype);
// The inverse of dtype_name(); nullopt for any other text.
std::optional<DType> dtype_from_name(std::string_view name);

int dtype_size(DType dtype);  // bytes of storage
bool is_floating(DType dtype);
bool is_integer(DType dtype);  // excludes bool
bool is_signed(DType dtype);   // signed integer or floating
// The type arithmetic on `dtype` is done in: float32 for the half types, the
// type itself otherwise.
DType compute_dtype(DType dtype);

}  // namespace kiln::ir
