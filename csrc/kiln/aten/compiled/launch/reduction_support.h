// What the compiled reduction ops (reduction_ops, index_reduction_ops,
// statistics_ops) share on top of launch_reduction:
//
// - StructuredOutputs<Meta, N> (structured_outputs.h): ATen's own meta
//   function of a reduction or scan, so argument checks, dim wrapping, output
//   shapes and dtypes and error messages are PyTorch's.
// - reduce(): launch_reduction over the dims of a tensor of any rank (0-dim
//   included) into outputs shaped with or without the reduced dims, with extra
//   per-output inputs (a mean, a maximum) broadcast along the reduced dims.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <string_view>

#include "kiln/aten/compiled/launch/reduction.h"
#include "kiln/aten/compiled/launch/structured_outputs.h"

namespace kiln::torch_integration::compiled {

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
