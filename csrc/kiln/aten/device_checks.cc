#include "kiln/aten/device_checks.h"

#include <c10/util/Exception.h>

namespace kiln::torch_integration {

void check_same_device(c10::Device expected, const at::Tensor& tensor, const char* op_name) {
  if (tensor.device() == expected) {
    return;
  }
  if (op_name != nullptr) {
    TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two "
                "devices, ", expected, " and ", tensor.device(), "! (in ", op_name, ")");
  }
  TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two "
              "devices, ", expected, " and ", tensor.device(), "!");
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
