#include "kiln/aten/compiled/nn/attention/multi_head_attention.h"

#include <ATen/ops/softmax.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>

#include <cmath>
#include <limits>

#include "kiln/aten/device_checks.h"

namespace kiln::torch_integration::compiled {
namespace {

// [B, T, E] -> [B, H, T, E / H]
at::Tensor split_heads(const at::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, x.size(2) / heads}).transpose(1, 2);
}

// The mask broadcast against the scores [B, H, L, S], as mask_type says.
at::Tensor mask_for_scores(const at::Tensor& mask, std::optional<int64_t> mask_type) {
  if (mask_type == 1) {
    TORCH_CHECK(mask.dim() == 2, "_native_multi_head_attention: a key padding mask (mask_type 1) must be "
                "[batch, source length], got ", mask.sizes());
    return mask.view({mask.size(0), 1, 1, mask.size(1)});
  }
  if (mask_type == 0) {
    TORCH_CHECK(mask.dim() == 2, "_native_multi_head_attention: an attention mask (mask_type 0) must be "
                "[target length, source length], got ", mask.sizes());
  }
  return mask;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> native_multi_head_attention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t embed_dim,
    int64_t num_heads, const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
    const at::Tensor& proj_weight, const at::Tensor& proj_bias, const std::optional<at::Tensor>& mask,
    bool need_weights, bool average_attn_weights, std::optional<int64_t> mask_type) {
  for (const at::Tensor* tensor : {&key, &value, &qkv_weight, &qkv_bias, &proj_weight, &proj_bias}) {
    check_same_device(query.device(), *tensor, "_native_multi_head_attention");
  }
  TORCH_CHECK(query.dim() == 3 && key.dim() == 3 && value.dim() == 3,
              "_native_multi_head_attention: expected query, key and value of shape [batch, length, "
              "embed_dim], got ", query.sizes(), ", ", key.sizes(), " and ", value.sizes());
  TORCH_CHECK(query.sizes() == key.sizes() && key.sizes() == value.sizes(),
              "expected `query`/`key`/`value` shapes to match");
  TORCH_CHECK(query.size(2) == embed_dim && num_heads > 0 && embed_dim % num_heads == 0,
              "_native_multi_head_attention: embed_dim ", embed_dim, " must be the query's last size (",
              query.size(2), ") and divisible by num_heads (", num_heads, ")");
  TORCH_CHECK(qkv_weight.dim() == 2 && qkv_weight.size(0) == 3 * embed_dim && qkv_bias.numel() == 3 * embed_dim,
              "_native_multi_head_attention: expected qkv_weight [3 * embed_dim, embed_dim] and qkv_bias [3 * "
              "embed_dim], got ", qkv_weight.sizes(), " and ", qkv_bias.sizes());
  at::Tensor q, k, v;
  if (query.is_same(key) && key.is_same(value)) {
    const auto parts = at::linear(query, qkv_weight, qkv_bias).chunk(3, -1);
    q = parts[0], k = parts[1], v = parts[2];
  } else {
    const auto weights = qkv_weight.chunk(3, 0);
    const auto biases = qkv_bias.chunk(3, 0);
    q = at::linear(query, weights[0], biases[0]);
    k = at::linear(key, weights[1], biases[1]);
    v = at::linear(value, weights[2], biases[2]);
  }
  const int64_t head_dim = embed_dim / num_heads;
  q = split_heads(q, num_heads).mul(1.0 / std::sqrt(static_cast<double>(head_dim)));
  k = split_heads(k, num_heads);
  v = split_heads(v, num_heads);
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1));  // [B, H, L, S]
  if (mask.has_value() && mask->defined()) {
    const at::Tensor shaped = mask_for_scores(*mask, mask_type);
    scores = shaped.scalar_type() == at::kBool
                 ? scores.masked_fill(shaped, -std::numeric_limits<double>::infinity())
                 : scores.add(shaped);
  }
  // A row with every position masked gives NaN, as the CPU's masked softmax.
  const at::Tensor weights = at::softmax(scores, -1);
  const at::Tensor context = at::matmul(weights, v).transpose(1, 2).reshape({query.size(0), query.size(1), embed_dim});
  at::Tensor output = at::linear(context, proj_weight, proj_bias);
  if (!need_weights) return {output, at::Tensor()};  // None, as the CPU gives
  return {output, average_attn_weights ? weights.sum(1).div(static_cast<double>(num_heads)) : weights};
}

}  // namespace kiln::torch_integration::compiled
