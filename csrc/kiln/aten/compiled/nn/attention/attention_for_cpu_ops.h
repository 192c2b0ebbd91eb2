// _scaled_dot_product_flash_attention_for_cpu and its backward on kiln: the
// op that scaled_dot_product_attention picks on a CPU-like device. Registered
// in aten/compiled/nn/loss/registration.cc.
//
// Composed of kiln's own kernels: the products through the library matmul,
// the masking, the softmax statistics and the gradients through compiled
// pointwise ops and reductions. As the CPU's flash kernel: half types compute
// in float (the probabilities rounded to the input dtype before their product
// with value), the causal mask keeps key j <= query i (top-left aligned), a
// fully masked row gives output 0 and logsumexp 0, the output is laid out
// like the query and logsumexp ([B, H, L], float for half types) like the
// CPU's [B, L, H] buffer transposed; the gradients come in the CPU's
// [B, L, H, E] layout transposed. No dropout, as the CPU's kernel.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> flash_attention_for_cpu(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, double dropout_p,
    bool is_causal, const std::optional<at::Tensor>& attn_mask, std::optional<double> scale);

std::tuple<at::Tensor, at::Tensor, at::Tensor> flash_attention_for_cpu_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& out, const at::Tensor& logsumexp, double dropout_p,
    bool is_causal, const std::optional<at::Tensor>& attn_mask, std::optional<double> scale);

}  // namespace kiln::torch_integration::compiled
