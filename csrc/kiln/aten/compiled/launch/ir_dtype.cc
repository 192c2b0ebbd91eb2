#include "kiln/aten/compiled/launch/ir_dtype.h"

#include <c10/util/Exception.h>

namespace kiln::torch_integration::compiled {

std::optional<ir::DType> to_ir_dtype(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Bool: return ir::DType::kBool;
    case c10::ScalarType::Byte: return ir::DType::kUInt8;
    case c10::ScalarType::Char: return ir::DType::kInt8;
    case c10::ScalarType::Short: return ir::DType::kInt16;
    case c10::ScalarType::Int: return ir::DType::kInt32;
    case c10::ScalarType::Long: return ir::DType::kInt64;
    case c10::ScalarType::Half: return ir::DType::kFloat16;
    case c10::ScalarType::BFloat16: return ir::DType::kBFloat16;
    case c10::ScalarType::Float: return ir::DType::kFloat32;
    case c10::ScalarType::Double: return ir::DType::kFloat64;
    default: return std::nullopt;
  }
}

c10::ScalarType to_scalar_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kBool: return c10::ScalarType::Bool;
    case ir::DType::kUInt8: return c10::ScalarType::Byte;
    case ir::DType::kInt8: return c10::ScalarType::Char;
    case ir::DType::kInt16: return c10::ScalarType::Short;
    case ir::DType::kInt32: return c10::ScalarType::Int;
    case ir::DType::kInt64: return c10::ScalarType::Long;
    case ir::DType::kFloat16: return c10::ScalarType::Half;
    case ir::DType::kBFloat16: return c10::ScalarType::BFloat16;
    case ir::DType::kFloat32: return c10::ScalarType::Float;
    case ir::DType::kFloat64: return c10::ScalarType::Double;
  }
  TORCH_INTERNAL_ASSERT(false, "unknown IR dtype");
}

ir::DType require_ir_dtype(c10::ScalarType type, const char* op_name) {
  std::optional<ir::DType> dtype = to_ir_dtype(type);
  TORCH_CHECK_TYPE(dtype.has_value(), op_name, ": dtype ", type,
                   " is not supported on the kiln device (compiled kernels cover bool, uint8, "
                   "int8, int16, int32, int64, float16, bfloat16, float32 and float64)");
  return *dtype;
}

ir::DType scalar_ir_dtype(const c10::Scalar& value, const char* op_name) {
  if (value.isBoolean()) return ir::DType::kBool;
  if (value.isIntegral(/*includeBool=*/false)) return ir::DType::kInt64;
  TORCH_CHECK_TYPE(value.isFloatingPoint(), op_name,
                   ": complex scalars are not supported on the kiln device");
  return ir::DType::kFloat64;
}

}  // namespace kiln::torch_integration::compiled
