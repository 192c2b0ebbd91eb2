// What runs for an ATen op on the kiln device that no family table registers:
// the CPU fallback (cpu_fallback.h), and the refusal of quantized tensors.
// The ops' own tables sit beside their kernels: native/registration.cc,
// library/registration.cc and compiled/<family>/registration.cc.
#include <torch/library.h>

#include "kiln/aten/cpu_fallback.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

// Quantized tensors are refused (dtype_policy.h): say so instead of the
// dispatcher's generic "could not run ... with arguments from Quantizedkiln".
TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_quantized>());
}

}  // namespace kiln::torch_integration
