// Pointwise kernels that need each element's coordinates: tril, triu, eye,
// arange, linspace. TensorIterator merges and reorders dims, which loses
// coordinates, so these build their iteration space themselves: iteration dim
// d is tensor dim (rank - 1 - d), so coordinate(0) is the column (the last
// dim) and coordinate(1) the row. Dims beyond the first `coordinate_dims`
// (batch dims, whose coordinates no body reads) are merged where every operand
// allows, so any batch rank fits the kernel's dim limit.
//
// The output and the inputs have one shape (the caller allocates and checks);
// the kernel is cached under `op_key` plus dtypes, layouts, rank and scalar
// kinds, and queued on the output's stream. Nothing runs for zero elements.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include <functional>
#include <string_view>
#include <vector>

#include "kiln/ir/builder.h"

namespace kiln::torch_integration::compiled {

struct CoordinateContext {
  ir::Builder& builder;
  std::vector<ir::ValueId> inputs;      // each input's value, in its compute dtype
  std::vector<ir::DType> input_dtypes;  // storage dtypes
  std::vector<ir::ValueId> scalars;     // launch scalars (f64, i64 or bool)
  ir::DType output_dtype;
  // The int64 coordinate along tensor dim (rank - 1 - `from_last`).
  ir::ValueId coordinate(int from_last) { return builder.coordinate(from_last); }
};

using CoordinateBody = std::function<ir::ValueId(CoordinateContext&)>;

// `op_name` is a string literal (op tracking keeps the pointer).
void launch_with_coordinates(const char* op_name, std::string_view op_key,
                             const at::Tensor& output, c10::ArrayRef<at::Tensor> inputs,
                             c10::ArrayRef<c10::Scalar> scalars, int coordinate_dims,
                             const CoordinateBody& body);

}  // namespace kiln::torch_integration::compiled
