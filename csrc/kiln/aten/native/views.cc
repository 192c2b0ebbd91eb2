// View ops are always native: a view through the CPU fallback would be a copy
// and silently break aliasing. They only build new TensorImpls over the same
// storage, so ATen's device-generic implementations serve. These are every
// ATen view op with a backend-specific kernel; the others are composite and
// reach the device as as_strided/view.
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>

#include "kiln/aten/native/native_kernels.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::native {

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  record_static_op("aten::as_strided", OpPath::kNative);
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) {
  record_static_op("aten::view", OpPath::kNative);
  return at::native::view(self, size);
}

at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  record_static_op("aten::_reshape_alias", OpPath::kNative);
  return at::native::_reshape_alias(self, size, stride);
}

at::Tensor unfold(const at::Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  record_static_op("aten::unfold", OpPath::kNative);
  return at::native::unfold(self, dimension, size, step);
}

at::Tensor view_as_real(const at::Tensor& self) {
  record_static_op("aten::view_as_real", OpPath::kNative);
  return at::native::view_as_real(self);
}

at::Tensor view_as_complex(const at::Tensor& self) {
  record_static_op("aten::view_as_complex", OpPath::kNative);
  return at::native::view_as_complex(self);
}

}  // namespace kiln::torch_integration::native
