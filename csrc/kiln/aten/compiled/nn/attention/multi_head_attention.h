// _native_multi_head_attention on kiln: the fused op nn.MultiheadAttention
// (and nn.TransformerEncoderLayer) calls in inference, batch first, when
// autograd is off. Registered in aten/compiled/nn/attention/registration.cc.
//
// Composed of kiln's own kernels, in the CPU kernel's order: the query, key
// and value projections (one product when the three are the same tensor),
// the query scaled by 1/sqrt(head_dim) before its product with the keys, the
// mask applied (a boolean mask removes the positions where it is true, a
// float mask is added) and a softmax (NaN for a row with nothing left, as
// the CPU's), the product with the values, the output projection. Query,
// key and value must have the same shape, as the CPU's kernel requires. mask_type as
// the CPU's: 0 a [L, S] mask, 1 a [B, S] key-padding mask, 2 a [B, H, L, S]
// one. Returns the output and, with need_weights, the attention weights
// ([B, H, L, S], or averaged over heads to [B, L, S]); else None.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> native_multi_head_attention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t embed_dim,
    int64_t num_heads, const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
    const at::Tensor& proj_weight, const at::Tensor& proj_bias, const std::optional<at::Tensor>& mask,
    bool need_weights, bool average_attn_weights, std::optional<int64_t> mask_type);

}  // namespace kiln::torch_integration::compiled
