#include "kiln/aten/dtype_policy.h"

#include <c10/util/Exception.h>

#include "kiln/base/config.h"

namespace kiln::torch_integration {

c10::ScalarType device_dtype(c10::ScalarType requested) {
  TORCH_CHECK_TYPE(!c10::isQIntType(requested), "kiln does not support dtype ",
                   c10::toString(requested),
                   ": quantized tensors cannot be stored on the kiln device");
  if (requested == c10::ScalarType::Double &&
      config().float64_policy() == Float64Policy::kFloat32) {
    TORCH_WARN_ONCE(
        "kiln stores float64 tensors as float32 (KILN_FLOAT64=float32); results computed in "
        "float64 on the CPU may differ. Set KILN_FLOAT64=native to keep float64.");
    return c10::ScalarType::Float;
  }
  if (requested == c10::ScalarType::ComplexDouble &&
      config().float64_policy() == Float64Policy::kFloat32) {
    return c10::ScalarType::ComplexFloat;
  }
  return requested;
}

}  // namespace kiln::torch_integration
