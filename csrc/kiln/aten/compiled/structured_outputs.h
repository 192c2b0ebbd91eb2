// StructuredOutputs: runs an ATen structured op's own meta function (shape,
// dtype and argument checks, error messages) and allocates or resizes its
// outputs the way the dispatcher's generated wrappers do, so a kiln kernel of
// a structured op behaves as the CPU's before any kernel runs.
//
//   StructuredOutputs<at::meta::structured__softmax, 1> meta;
//   meta.meta(self, dim, half_to_float);     // functional: allocates
//   at::Tensor& out = meta.output(0);
//
//   StructuredOutputs<at::meta::structured__softmax, 1> meta({out});
//   meta.meta(self, dim, half_to_float);     // out=: checks dtype, resizes
#pragma once

#include <ATen/TensorMeta.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <array>
#include <initializer_list>

namespace kiln::torch_integration::compiled {

template <typename Meta, size_t N>
class StructuredOutputs final : public Meta {
 public:
  StructuredOutputs() = default;
  // out= form: the caller's tensors, in the op's output order.
  StructuredOutputs(std::initializer_list<at::Tensor> outputs) {
    size_t index = 0;
    for (const at::Tensor& tensor : outputs) {
      outputs_[index] = tensor;
      provided_[index] = true;
      ++index;
    }
  }

  at::Tensor& output(size_t index) { return outputs_[index]; }

  const at::Tensor& maybe_get_output(int64_t index) override { return outputs_[index]; }

  void set_output_raw_strided(int64_t index, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    at::Tensor& out = outputs_[index];
    if (!provided_[index]) {
      out = strides.empty() ? at::empty(sizes, options) : at::empty_strided(sizes, strides, options);
      return;
    }
    // As the generated resize_out of an out= wrapper.
    TORCH_CHECK(options.dtype() == out.dtype(), "Expected out tensor to have dtype ",
                options.dtype(), ", but got ", out.dtype(), " instead");
    TORCH_CHECK(options.device() == out.device(), "Expected out tensor to have device ",
                options.device(), ", but got ", out.device(), " instead");
    bool resized = at::native::resize_output(out, sizes);
    if (resized) {
      if (!strides.empty()) {
        out.as_strided_(sizes, strides);
      } else if (options.memory_format_opt().has_value()) {
        out.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
      }
    }
  }

  void set_output_strided(int64_t index, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    // Kiln kernels take any strides: no proxy outputs are needed.
    set_output_raw_strided(index, sizes, provided_[index] ? at::IntArrayRef() : strides, options);
  }

 private:
  std::array<at::Tensor, N> outputs_;
  std::array<bool, N> provided_{};
};

}  // namespace kiln::torch_integration::compiled
