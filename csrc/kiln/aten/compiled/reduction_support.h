// What the compiled reduction ops (reduction_ops, index_reduction_ops,
// statistics_ops) share on top of launch_reduction:
//
// - ReductionOutputs<Meta, N>: runs ATen's own structured meta function for a
//   reduction or scan (at::meta::structured_<op>::meta), so argument checks,
//   dim wrapping, output shapes and dtypes and error messages are PyTorch's. A
//   functional call allocates the outputs on the input's device; an out= call
//   checks and resizes the given tensors, an in-place call checks `self`, as
//   torchgen's CPU wrappers do.
// - reduce(): launch_reduction over the dims of a tensor of any rank (0-dim
//   included) into outputs shaped with or without the reduced dims, with extra
//   per-output inputs (a mean, a maximum) broadcast along the reduced dims.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <string_view>

#include "kiln/aten/compiled/reduction.h"

namespace kiln::torch_integration::compiled {

// torchgen's output bookkeeping: a new tensor (with the meta function's
// strides when it gave any), or an out= tensor checked for dtype and device
// and resized (restrided only when it was resized).
at::Tensor allocate_output(c10::IntArrayRef sizes, c10::IntArrayRef strides,
                           const c10::TensorOptions& options);
void resize_out(const at::Tensor& out, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                const c10::TensorOptions& options);
// An in-place call's target (`self`) must already have the output's dtype,
// device and sizes.
void check_in_place_target(const at::Tensor& self, c10::IntArrayRef sizes,
                           const c10::TensorOptions& options);

// For meta classes deriving from at::impl::MetaBase (reductions; pointwise ops
// use StructuredIterator). Call meta() with the op's arguments, then read
// output(i).
template <typename Meta, size_t N = 1>
class ReductionOutputs final : public Meta {
 public:
  // Functional: meta() allocates the outputs.
  ReductionOutputs() = default;
  // out=: meta() checks and resizes `outputs`; in place (cumsum_): meta()
  // checks that `outputs` (self) already fit.
  explicit ReductionOutputs(std::array<at::Tensor, N> outputs, bool in_place = false)
      : outputs_(std::move(outputs)), provided_(true), in_place_(in_place) {}

  void set_output_raw_strided(int64_t index, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                              c10::TensorOptions options) override {
    if (in_place_) {
      check_in_place_target(outputs_[index], sizes, options);
    } else if (provided_) {
      resize_out(outputs_[index], sizes, strides, options);
    } else {
      outputs_[index] = allocate_output(sizes, strides, options);
    }
  }
  const at::Tensor& maybe_get_output(int64_t index) override { return outputs_[index]; }

  const at::Tensor& output(size_t index = 0) const { return outputs_[index]; }

 private:
  std::array<at::Tensor, N> outputs_;
  bool provided_ = false;
  bool in_place_ = false;
};

// The reduced dims of a reduction of `self` over `dims`, wrapped and sorted:
// every dim when `dims` is absent or empty (unless `allow_empty_dims`, for
// any/all, where empty reduces nothing). Raises PyTorch's errors for a dim out
// of range or repeated.
c10::DimVector reduced_dims(const at::Tensor& self, at::OptionalIntArrayRef dims,
                            bool allow_empty_dims = false);

// The shape of a reduction of `self` over `reduced`.
c10::DimVector reduced_shape(const at::Tensor& self, c10::IntArrayRef reduced, bool keepdim);

// How many input elements each output element of a reduction of `self` over
// `reduced` folds.
int64_t reduced_count(const at::Tensor& self, c10::IntArrayRef reduced);

// Runs `spec` over `self` (kernel input 0), reducing `reduced` (from
// reduced_dims) into `outputs`, each shaped as reduced_shape with or without
// keepdim. `broadcast_inputs` (kernel inputs 1...) have an output's shape and
// are read at each element's output position. Nothing runs when the outputs
// are empty; an empty reduced dim leaves the reduction's identity for the
// epilogue.
void reduce(const char* op_name, std::string_view key, const at::Tensor& self,
            c10::IntArrayRef reduced, c10::ArrayRef<at::Tensor> outputs,
            c10::ArrayRef<at::Tensor> broadcast_inputs, c10::ArrayRef<c10::Scalar> scalars,
            const ReductionSpec& spec);

// out = source converted to out's dtype, elementwise (same shapes), as one
// compiled pointwise kernel.
void convert_into(const char* op_name, const at::Tensor& out, const at::Tensor& source);

// Input `index` of a reduction converted to `dtype` as ATen converts a
// reduction's input to its output dtype first (rounded for half types), or
// left alone when it has that dtype already.
ir::ValueId converted_input(ReductionContext& context, int index, ir::DType dtype);

}  // namespace kiln::torch_integration::compiled
