// StructuredOutputs: runs an ATen structured op's own meta function (shape,
// dtype and argument checks, error messages) and allocates, checks or resizes
// its outputs the way the dispatcher's generated CPU wrappers do, so a kiln
// kernel of a structured op behaves as the CPU's before any kernel runs. For
// meta classes deriving from at::impl::MetaBase (reductions, softmax, losses,
// pooling); pointwise ops, whose meta classes are TensorIterators, use
// StructuredIterator (structured_iterator.h), which shares the bookkeeping.
//
//   StructuredOutputs<at::meta::structured__softmax> meta;
//   meta.meta(self, dim, half_to_float);     // functional: allocates
//   at::Tensor& result = meta.output();
//
//   StructuredOutputs<at::meta::structured__softmax> meta({out});
//   meta.meta(self, dim, half_to_float);     // out=: checks dtype, resizes
//
//   StructuredOutputs<at::meta::structured_cumsum> meta({self}, /*in_place=*/true);
#pragma once

#include <ATen/TensorMeta.h>

#include <array>

#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {

template <typename Meta, size_t N = 1>
class StructuredOutputs final : public Meta {
 public:
  // Functional: meta() allocates the outputs.
  StructuredOutputs() = default;
  // out=: the caller's tensors, in the op's output order, checked and resized.
  // In place: the tensors are `self` and must already fit.
  StructuredOutputs(std::array<at::Tensor, N> outputs, bool in_place = false)
      : outputs_(std::move(outputs)), target_(in_place ? Target::kInPlace : Target::kOut) {}

  at::Tensor& output(size_t index = 0) { return outputs_[index]; }

  const at::Tensor& maybe_get_output(int64_t index) override { return outputs_[index]; }

  void set_output_raw_strided(int64_t index, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    switch (target_) {
      case Target::kFunctional: outputs_[index] = create_output(sizes, strides, options); break;
      case Target::kInPlace: check_in_place_output(outputs_[index], sizes, options); break;
      case Target::kOut: resize_out_output(outputs_[index], sizes, strides, options); break;
    }
  }

  void set_output_strided(int64_t index, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    // Kiln kernels take any strides: no proxy outputs are needed, and an out=
    // tensor keeps its own.
    set_output_raw_strided(index, sizes,
                           target_ == Target::kFunctional ? strides : at::IntArrayRef(), options);
  }

 private:
  std::array<at::Tensor, N> outputs_;
  Target target_ = Target::kFunctional;
};

}  // namespace kiln::torch_integration::compiled
