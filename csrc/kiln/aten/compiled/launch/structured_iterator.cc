#include "kiln/aten/compiled/launch/structured_iterator.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/as_strided.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

namespace kiln::torch_integration::compiled {

at::Tensor create_output(c10::IntArrayRef sizes, c10::IntArrayRef strides,
                         const c10::TensorOptions& options) {
  if (strides.empty()) return at::empty(sizes, options);
  return at::empty_strided(sizes, strides, options);
}

// The messages are the ones torchgen's generated CPU kernels raise.
void check_in_place_output(const at::Tensor& self, c10::IntArrayRef sizes,
                           const c10::TensorOptions& options) {
  TORCH_CHECK(options.dtype() == self.dtype(), "Bad in-place call: input tensor dtype ",
              self.dtype(), " and output tensor dtype ", options.dtype(), " should match");
  TORCH_CHECK(options.device() == self.device(), "Bad in-place call: input tensor device ",
              self.device(), " and output tensor device ", options.device(), " should match");
  TORCH_CHECK(sizes == self.sizes(), "Bad in-place call: input tensor size ", self.sizes(),
              " and output tensor size ", sizes, " should match");
}

void resize_out_output(const at::Tensor& out, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                       const c10::TensorOptions& options) {
  TORCH_CHECK(options.dtype() == out.dtype(), "Expected out tensor to have dtype ",
              options.dtype(), ", but got ", out.dtype(), " instead");
  TORCH_CHECK(options.device() == out.device(), "Expected out tensor to have device ",
              options.device(), ", but got ", out.device(), " instead");
  // The meta function's strides are advisory: an out= tensor that already has
  // the right size keeps its own.
  if (!at::native::resize_output(out, sizes)) return;
  if (!strides.empty()) {
    out.as_strided_(sizes, strides);
  } else if (options.memory_format_opt().has_value()) {
    out.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
  }
}

}  // namespace kiln::torch_integration::compiled
