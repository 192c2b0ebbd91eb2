// nn.functional.embedding_bag on kiln (registered in aten/compiled/nn/spatial/registration.cc).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _embedding_bag(
    const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
    bool scale_grad_by_freq, int64_t mode, bool sparse,
    const std::optional<at::Tensor>& per_sample_weights, bool include_last_offset,
    int64_t padding_idx);

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _embedding_bag_forward_only(
    const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
    bool scale_grad_by_freq, int64_t mode, bool sparse,
    const std::optional<at::Tensor>& per_sample_weights, bool include_last_offset,
    int64_t padding_idx);

at::Tensor _embedding_bag_backward(
    const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offsets,
    const at::Tensor& offset2bag, const at::Tensor& bag_size, const at::Tensor& maximum_indices,
    int64_t num_weights, bool scale_grad_by_freq, int64_t mode, bool sparse,
    const std::optional<at::Tensor>& per_sample_weights, int64_t padding_idx);

at::Tensor _embedding_bag_dense_backward(
    const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offset2bag,
    const at::Tensor& bag_size, const at::Tensor& maximum_indices, int64_t num_weights,
    bool scale_grad_by_freq, int64_t mode, const std::optional<at::Tensor>& per_sample_weights,
    int64_t padding_idx);

at::Tensor _embedding_bag_per_sample_weights_backward(
    const at::Tensor& grad, const at::Tensor& weight, const at::Tensor& indices,
    const at::Tensor& offsets, const at::Tensor& offset2bag, int64_t mode, int64_t padding_idx);

}  // namespace kiln::torch_integration::compiled
