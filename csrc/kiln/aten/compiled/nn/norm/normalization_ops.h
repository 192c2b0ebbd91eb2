// Compiled layer and group normalization, forward and backward
// (normalization_ops.cc; batch norm: batch_norm_ops.h; shared helpers in
// normalization_support.h). Registered in nn/norm/registration.cc.
//
// Statistics are two-pass (the mean, then the sum of squared deviations from
// it), each a compiled reduction, in float32 (float64 for float64 inputs);
// the normalized output is one pointwise kernel. Dtypes follow ATen's CPU
// kernels: a float16/bfloat16 input with float32 parameters keeps float32
// statistics ("mixed type"), otherwise statistics take the input's dtype, and
// the output kernels read the unrounded statistics.
//
// Batch norm in training updates running_mean and running_var in place with
// `momentum` (running_var from the unbiased variance), as the CPU does.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(
    const at::Tensor& input, at::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, at::IntArrayRef normalized_shape,
    const at::Tensor& mean, const at::Tensor& rstd, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, std::array<bool, 3> output_mask);

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, int64_t N, int64_t C, int64_t HxW, int64_t group,
    double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight, int64_t N, int64_t C,
    int64_t HxW, int64_t group, std::array<bool, 3> output_mask);

}  // namespace kiln::torch_integration::compiled
