// What the compiled normalizations (normalization_ops.cc: layer and group
// norm; batch_norm_ops.cc) share: statistic dtypes, summing reductions and
// the rstd kernel.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/aten/compiled/launch/reduction.h"

namespace kiln::torch_integration::compiled::normalization {

using ir::DType;
using ir::OpCode;
using ir::ValueId;

// Statistics accumulate in float32, or float64 for float64 inputs.
at::ScalarType accumulate_type(at::ScalarType type);
// The IR compute dtype of the statistics of an input of `type`.
DType compute_of(at::ScalarType type);
const at::Tensor& value_or_undefined(const std::optional<at::Tensor>& tensor);
// The NotImplementedError the CPU kernel `kernel` raises for a non-float input.
void check_floating(const at::Tensor& input, const char* kernel);
// `result` when it already has the accumulate dtype, else a buffer of its
// shape that does: the unrounded statistic later kernels read.
at::Tensor accumulate_buffer(const at::Tensor& result, at::ScalarType accumulate);

// A sum over `reduced` of `element`, finished by `finish` (identity when
// null) and stored into every tensor of `outputs` (keepdim views, or 1-D
// vectors placed along `vector_dim`).
using ElementFn = std::function<ValueId(ReductionContext&)>;
using FinishFn = std::function<std::vector<ValueId>(ReductionContext&, ValueId)>;
void launch_sum(const char* op_name, std::string_view key, c10::ArrayRef<at::Tensor> inputs,
                c10::ArrayRef<at::Tensor> outputs, c10::IntArrayRef reduced,
                c10::ArrayRef<c10::Scalar> scalars, ElementFn element, FinishFn finish);

// Views of `tensors` (1-D, length input.size(dim)) as keepdim outputs of a
// reduction of a rank-`rank` tensor over every dim but `dim`.
at::Tensor channel_view(const at::Tensor& vector, int64_t rank, int64_t dim);

// Launch scalar `index` cast to `dtype`.
ValueId scalar_as(ReductionContext& context, int index, DType dtype);

// rstd = 1 / sqrt(mean((x - mean)^2) + eps) over `reduced`, into every tensor
// of `outputs`, as the CPU's layer and group norm compute it in `compute`.
// `mean_full` is the mean expanded to `input`'s shape.
void launch_rstd(const char* op_name, std::string_view key, const at::Tensor& input,
                 const at::Tensor& mean_full, c10::ArrayRef<at::Tensor> outputs,
                 c10::IntArrayRef reduced, const c10::Scalar& count, const c10::Scalar& eps,
                 DType compute);

// One grad_input element of layer or group norm from g = dy * weight (dy
// without a weight), x, the row's mean and rstd, its sums ds = sum(g * x) and
// db = sum(g), and its element count n, as ATen's CPU kernels:
// rstd * g + b * x + c with b = (db * mean - ds) * rstd^3 / n and
// c = -b * mean - db * rstd / n.
ValueId normalized_grad_input(ir::Builder& builder, ValueId g, ValueId x, ValueId mean, ValueId rstd, ValueId ds,
                              ValueId db, ValueId n);

// 1 / sqrt(var + eps), or 0 when both are 0 (ATen's InvStd).
ValueId inverse_std(ir::Builder& builder, ValueId var, ValueId eps);

// The dims 0..rank-1 but `kept`; the dims begin..end-1.
c10::DimVector all_but(int64_t rank, int64_t kept);
c10::DimVector range_dims(int64_t begin, int64_t end);

}  // namespace kiln::torch_integration::compiled::normalization
