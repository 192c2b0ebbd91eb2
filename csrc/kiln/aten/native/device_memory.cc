#include "kiln/aten/native/device_memory.h"

#include <ATen/ops/from_blob.h>

#include "kiln/c10/device_guard.h"

namespace kiln::torch_integration {

at::Tensor host_alias(const at::Tensor& tensor) {
  return at::from_blob(tensor.data_ptr(), tensor.sizes(), tensor.strides(),
                       tensor.options().device(c10::kCPU));
}

Stream& stream_of(const at::Tensor& tensor) {
  return current_runtime_stream(tensor.device().index());
}

}  // namespace kiln::torch_integration
