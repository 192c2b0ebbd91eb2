// Mapping between ATen scalar types and Kiln IR dtypes.
#pragma once

#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <optional>

#include "kiln/ir/dtype.h"

namespace kiln::torch_integration::compiled {

// The IR dtype of `type`, or nullopt for types compiled kernels do not cover
// (complex, float8, the wide unsigned types, quantized).
std::optional<ir::DType> to_ir_dtype(c10::ScalarType type);

// The ATen scalar type of an IR dtype (every IR dtype has one).
c10::ScalarType to_scalar_type(ir::DType dtype);

// to_ir_dtype, or a TypeError naming the op and the dtype.
ir::DType require_ir_dtype(c10::ScalarType type, const char* op_name);

// The launch-argument dtype of a Scalar: f64, i64 or bool.
ir::DType scalar_ir_dtype(const c10::Scalar& value, const char* op_name);

}  // namespace kiln::torch_integration::compiled
