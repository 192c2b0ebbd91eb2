// Batch norm, forward (training and eval; running statistics updated in
// place with `momentum`, running_var from the unbiased variance, as the CPU
// does) and backward (batch_norm_ops.cc). Statistics and dtypes as in
// normalization_ops.h.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, bool training, double momentum, double eps);
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> native_batch_norm_out(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, bool training, double momentum, double eps,
    at::Tensor& out, at::Tensor& save_mean, at::Tensor& save_invstd);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, at::Tensor& running_mean, at::Tensor& running_var,
    bool training, double momentum, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit_no_stats(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, bool training, double momentum, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_with_update(
    const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, at::Tensor& running_mean, at::Tensor& running_var,
    double momentum, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_invstd,
    bool train, double eps, std::array<bool, 3> output_mask);
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var,
    bool update, double eps, std::array<bool, 3> output_mask, const at::Tensor& reserve);

}  // namespace kiln::torch_integration::compiled
