#include "kiln/aten/device_checks.h"

#include <c10/util/Exception.h>

namespace kiln::torch_integration {

void raise_device_mismatch(c10::Device expected, c10::Device found, const char* op_name) {
  TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two "
              "devices, ", expected, " and ", found, "!",
              op_name != nullptr ? c10::str(" (in ", op_name, ")") : std::string());
}

void check_same_device(std::initializer_list<std::reference_wrapper<const at::Tensor>> tensors) {
  const at::Tensor* first = nullptr;
  for (const at::Tensor& tensor : tensors) {
    if (!tensor.defined()) continue;
    if (first == nullptr) {
      first = &tensor;
      continue;
    }
    check_same_device(first->device(), tensor);
  }
}

}  // namespace kiln::torch_integration
