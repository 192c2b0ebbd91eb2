// resize_ and the set_ overloads: kernels that change which storage a tensor
// views, or how much of it there is.
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/TensorImpl.h>

#include "kiln/aten/native/native_kernels.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/device_allocator.h"

namespace kiln::torch_integration::native {
namespace {

// Sets sizes (and strides, when given) and grows the storage if it no longer
// holds every element. Growing keeps the old bytes (hooks.cc).
void resize_impl(c10::TensorImpl* impl, c10::IntArrayRef size,
                 std::optional<c10::IntArrayRef> stride) {
  if (impl->sizes() == size && (!stride.has_value() || impl->strides() == *stride)) return;
  size_t item_size = impl->dtype().itemsize();
  size_t offset = static_cast<size_t>(impl->storage_offset());
  size_t bytes;
  if (stride.has_value()) {
    impl->set_sizes_and_strides(size, *stride);
    bytes = at::detail::computeStorageNbytes(size, *stride, item_size, offset);
  } else {
    impl->set_sizes_contiguous(size);
    bytes = at::detail::computeStorageNbytesContiguous(size, item_size, offset);
  }
  if (bytes > impl->storage().nbytes()) {
    at::detail::getPrivateUse1Hooks().resizePrivateUse1Bytes(impl->storage(), bytes);
  }
}

}  // namespace

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  record_static_op("aten::resize_", OpPath::kNative);
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  resize_impl(impl, size, std::nullopt);
  if (memory_format.has_value()) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve,
                "Unsupported memory format ", *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Tensor& set_storage_with_offset(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                                    c10::IntArrayRef size, c10::IntArrayRef stride) {
  record_static_op("aten::set_.source_Storage_storage_offset", OpPath::kNative);
  at::native::checkSetStorage(self, source, storage_offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  std::optional<c10::IntArrayRef> strides;
  if (stride.data() != nullptr) strides = stride;
  resize_impl(self.unsafeGetTensorImpl(), size, strides);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source) {
  record_static_op("aten::set_.source_Storage", OpPath::kNative);
  int64_t elements = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage_with_offset(self, std::move(source), 0, {elements}, {});
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) {
  record_static_op("aten::set_.source_Tensor", OpPath::kNative);
  if (self.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) return self;
  return set_storage_with_offset(self, source.storage(), source.storage_offset(), source.sizes(),
                                 source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  record_static_op("aten::set_", OpPath::kNative);
  c10::DeviceGuard guard(self.device());
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, &device_allocator(),
                     /*resizable=*/true);
  return set_storage_with_offset(self, std::move(empty), 0, {0}, {});
}

// ATen lists the dense backends whose tensors may swap metadata (CPU, CUDA,
// ...) and leaves PrivateUse1 to its backend. Without this, `param.data =
// param.to("kiln")` is refused, so Module.to("kiln") makes a new Parameter
// per module and breaks tied weights (a language model's embedding and head).
// kiln and CPU tensors are both plain strided TensorImpls: they are compatible
// with each other, as CUDA and CPU tensors are.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  record_static_op("aten::_has_compatible_shallow_copy_type", OpPath::kNative);
  if (self.key_set() == from.key_set()) return true;
  auto dense_cpu_or_kiln = [](const at::Tensor& tensor) {
    return tensor.layout() == c10::kStrided && !tensor.is_quantized() &&
           (tensor.device().is_cpu() || tensor.device().is_privateuseone());
  };
  return dense_cpu_or_kiln(self) && dense_cpu_or_kiln(from);
}

}  // namespace kiln::torch_integration::native
