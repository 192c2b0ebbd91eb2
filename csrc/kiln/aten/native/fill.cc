// fill_, zero_ and reading one element back (_local_scalar_dense, behind
// .item()). fill_ is queued on the stream and runs ATen's CPU fill over an alias
// of the device memory; reading a scalar waits for the stream.
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/fill.h>

#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/native/native_kernels.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration::native {
namespace {

at::Tensor& enqueue_fill(at::Tensor& self, const c10::Scalar& value, const char* name) {
  if (self.numel() == 0) return self;
  at::Tensor target = self;  // keeps the memory alive until the fill ran
  check_status(stream_of(self).enqueue(name, [target, value]() {
    host_alias(target).fill_(value);
    return Status();
  }));
  return self;
}

}  // namespace

at::Tensor& fill_scalar(at::Tensor& self, const c10::Scalar& value) {
  record_op("aten::fill_.Scalar", OpPath::kNative);
  return enqueue_fill(self, value, "aten::fill_.Scalar");
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  record_op("aten::fill_.Tensor", OpPath::kNative);
  TORCH_CHECK(value.dim() == 0,
              "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  return enqueue_fill(self, value.item(), "aten::fill_.Tensor");
}

at::Tensor& zero(at::Tensor& self) {
  record_op("aten::zero_", OpPath::kNative);
  return enqueue_fill(self, c10::Scalar(0), "aten::zero_");
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  record_op("aten::_local_scalar_dense", OpPath::kNative);
  TORCH_CHECK(self.numel() > 0, "cannot get the value of a tensor with no elements");
  c10::Scalar result;
  check_status(stream_of(self).run_synchronously("aten::_local_scalar_dense", [&]() {
    result = at::_local_scalar_dense(host_alias(self));
    return Status();
  }));
  return result;
}

}  // namespace kiln::torch_integration::native
