// Eager layer and group norm as row kernels (ir::KernelKind::kRow), where
// their rows suit them (rows_suit_row_kernel, reduction.h): the forward's mean
// and variance, and layer norm's backward's two row sums for grad_input, are
// the stages of one kernel each, which also stores the normalized or gradient
// elements. The arithmetic is that of normalization_ops.cc's kernels, which
// handle the other layouts.
#pragma once

#include <ATen/core/Tensor.h>

#include <string_view>

#include "kiln/ir/builder.h"
#include "kiln/ir/dtype.h"

namespace kiln::torch_integration::compiled::normalization {

// How the normalization's weight and bias apply, as ATen's CPU kernels apply
// them: layer norm (x * rstd - rstd * mean) * weight + bias, group norm
// x * (rstd * weight) + (bias - rstd * weight * mean).
enum class Affine { kLayerNorm, kGroupNorm };

// One output element from x and the row's mean and rstd (in `compute`), and
// the weight and bias as loaded (ir::kNoValue when absent): the arithmetic of
// both the row kernels and the plain kernels.
ir::ValueId normalized_element(ir::Builder& builder, Affine affine, ir::DType compute, ir::ValueId x,
                               ir::ValueId mean, ir::ValueId rstd, ir::ValueId weight, ir::ValueId bias);

// Normalizes the rows (the dims `reduced`, `count` elements each) of `input`
// into `output`, storing each row's mean and rstd (in their own dtype) into
// `mean` and `rstd`, expanded to the input's shape (stride 0 in the row dims).
// weight and bias, undefined when absent, are expanded to the input's shape.
void normalize_rows(const char* op_name, std::string_view key, Affine affine, const at::Tensor& input,
                    const at::Tensor& weight, const at::Tensor& bias, c10::IntArrayRef reduced, double count,
                    double eps, ir::DType compute, const at::Tensor& output, const at::Tensor& mean,
                    const at::Tensor& rstd);

// Layer norm's grad_input over rows of `count` elements from the last
// `input.dim() - axis` dims: the row sums ds and db are the kernel's stages,
// and each element is normalization_support.h's normalized_grad_input.
// mean_full, rstd_full and weight_full (undefined when absent) are expanded
// to the input's shape.
void layer_norm_backward_input_rows(const char* op_name, const at::Tensor& grad_out, const at::Tensor& input,
                                    const at::Tensor& mean_full, const at::Tensor& rstd_full,
                                    const at::Tensor& weight_full, int64_t axis, double count, ir::DType compute,
                                    const at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled::normalization
