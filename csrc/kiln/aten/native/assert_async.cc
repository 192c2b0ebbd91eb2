// torch._assert_async on the kiln device. ATen's CPU kernels for it only read
// the tensor's one value through .item() (a native read at a sync point on
// kiln), so they serve kiln as they are; the assertion is checked at the
// call, as on the CPU, rather than later as CUDA's device-side assert is.
// torch.multinomial (ATen's checks of the probabilities) and
// torch.distributions' argument validation reach it.
#include <ATen/ops/_assert_async_native.h>

#include "kiln/aten/native/native_kernels.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::native {

void assert_async(const at::Tensor& self) {
  record_static_op("aten::_assert_async", OpPath::kNative);
  at::native::_assert_async_cpu(self);
}

void assert_async_message(const at::Tensor& self, c10::string_view message) {
  record_static_op("aten::_assert_async.msg", OpPath::kNative);
  at::native::_assert_async_msg_cpu(self, message);
}

}  // namespace kiln::torch_integration::native
