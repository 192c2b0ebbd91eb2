#include "kiln/ir/dtype.h"

namespace kiln::ir {
namespace {

struct DTypeInfo {
  const char* name;
  int size;
};

constexpr DTypeInfo kInfo[kDTypeCount] = {
    {"bool", 1}, {"u8", 1},  {"i8", 1},   {"i16", 2}, {"i32", 4},
    {"i64", 8},  {"f16", 2}, {"bf16", 2}, {"f32", 4}, {"f64", 8},
};

}  // namespace

const char* dtype_name(DType dtype) { return kInfo[static_cast<int>(dtype)].name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (int index = 0; index < kDTypeCount; ++index) {
    if (name == kInfo[index].name) return static_cast<DType>(index);
  }
  return std::nullopt;
}

int dtype_size(DType dtype) { return kInfo[static_cast<int>(dtype)].size; }

bool is_floating(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16 || dtype == DType::kFloat32 ||
         dtype == DType::kFloat64;
}

bool is_integer(DType dtype) { return !is_floating(dtype) && dtype != DType::kBool; }

bool is_signed(DType dtype) {
  return is_floating(dtype) || dtype == DType::kInt8 || dtype == DType::kInt16 ||
         dtype == DType::kInt32 || dtype == DType::kInt64;
}

DType compute_dtype(DType dtype) {
  return (dtype == DType::kFloat16 || dtype == DType::kBFloat16) ? DType::kFloat32 : dtype;
}

}  // namespace kiln::ir
