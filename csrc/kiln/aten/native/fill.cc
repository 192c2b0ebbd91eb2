// fill_, zero_ and reading one element back (_local_scalar_dense, behind
// .item()). A fill is launched on the stream: dense memory is filled directly
// with the value converted in the caller, strided tensors through ATen's CPU
// fill over an alias of the device memory. Reading a scalar waits for the stream.
#include <ATen/Dispatch_v2.h>
#include <ATen/ops/fill.h>

#include <algorithm>

#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/native/native_kernels.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration::native {
namespace {

#define KILN_ALL_DTYPES                                                              \
  AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kBool, at::kHalf, at::kBFloat16,           \
      AT_EXPAND(AT_FLOAT8_TYPES), AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES)

at::Tensor& launch_fill(at::Tensor& self, const c10::Scalar& value, const char* name) {
  if (self.numel() == 0) return self;
  at::Tensor target = self;  // keeps the memory alive until the fill ran
  Status status;
  // Convert in the caller, so a value that does not fit the dtype raises here
  // (as on the CPU) and nothing is queued.
  AT_DISPATCH_V2(self.scalar_type(), "kiln_fill", AT_WRAP([&] {
    scalar_t converted = value.to<scalar_t>();
    size_t bytes = target.nbytes();
    if (target.is_non_overlapping_and_dense()) {
      status = stream_of(self).launch(name, bytes, [target, converted]() {
        std::fill_n(static_cast<scalar_t*>(target.data_ptr()), target.numel(), converted);
        return Status();
      });
    } else {
      status = stream_of(self).launch(name, bytes, [target, value]() {
        host_alias(target).fill_(value);
        return Status();
      });
    }
  }), KILN_ALL_DTYPES);
  check_status(status);
  return self;
}

// Reads element 0 of `tensor` (host-addressable device memory) as a Scalar.
c10::Scalar read_scalar(const at::Tensor& tensor) {
  const void* data = tensor.data_ptr();
  c10::Scalar result;
  AT_DISPATCH_V2(tensor.scalar_type(), "kiln_item", AT_WRAP([&] {
    result = c10::Scalar(*static_cast<const scalar_t*>(data));
  }), KILN_ALL_DTYPES);
  return result;
}

}  // namespace

at::Tensor& fill_scalar(at::Tensor& self, const c10::Scalar& value) {
  record_static_op("aten::fill_.Scalar", OpPath::kNative);
  return launch_fill(self, value, "aten::fill_.Scalar");
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  record_static_op("aten::fill_.Tensor", OpPath::kNative);
  TORCH_CHECK(value.dim() == 0,
              "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  return launch_fill(self, value.item(), "aten::fill_.Tensor");
}

at::Tensor& zero(at::Tensor& self) {
  record_static_op("aten::zero_", OpPath::kNative);
  return launch_fill(self, c10::Scalar(0), "aten::zero_");
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  record_static_op("aten::_local_scalar_dense", OpPath::kNative);
  TORCH_CHECK(self.numel() > 0, "cannot get the value of a tensor with no elements");
  c10::Scalar result;
  check_status(stream_of(self).run_synchronously("aten::_local_scalar_dense", [&]() {
    result = read_scalar(self);
    return Status();
  }));
  return result;
}

}  // namespace kiln::torch_integration::native
