// Eager layer norm as row kernels (ir::KernelKind::kRow), where its rows suit
// them (rows_suit_row_kernel, reduction.h): the forward's mean and variance,
// and the backward's two row sums for grad_input, are the stages of one
// kernel each, which also stores the normalized or gradient elements. The
// arithmetic is that of normalization_ops.cc's kernels, which handle the
// other layouts.
#pragma once

#include <ATen/core/Tensor.h>

#include "kiln/ir/dtype.h"

namespace kiln::torch_integration::compiled::normalization {

// output = (x * rstd - rstd * mean) * weight + bias over rows of `count`
// elements; mean and rstd, of the statistics' shape (1 in the row dims), in
// their own dtype. weight and bias, undefined when absent, are expanded to
// the input's shape.
void layer_norm_forward_rows(const char* op_name, const at::Tensor& input, const at::Tensor& weight,
                             const at::Tensor& bias, int64_t axis, double count, double eps, ir::DType compute,
                             const at::Tensor& output, const at::Tensor& mean, const at::Tensor& rstd);

// grad_input = rstd * dy * w + b * x + c, with ds = sum(dy * w * x) and
// db = sum(dy * w) over each row, b = (db * mean - ds) * rstd^3 / count and
// c = -b * mean - db * rstd / count, as ATen's CPU kernel. mean_full,
// rstd_full and weight_full (undefined when absent) are expanded to the
// input's shape.
void layer_norm_backward_input_rows(const char* op_name, const at::Tensor& grad_out, const at::Tensor& input,
                                    const at::Tensor& mean_full, const at::Tensor& rstd_full,
                                    const at::Tensor& weight_full, int64_t axis, double count, ir::DType compute,
                                    const at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled::normalization
