// The inference fast path of nn.TransformerEncoderLayer, nn.TransformerEncoder
// and nn.MultiheadAttention on kiln (eval mode, no autograd, batch first):
// PyTorch takes it on every device it lists, kiln (PrivateUse1) included.
// Registered in aten/compiled/nn/attention/registration.cc.
//
// _transformer_encoder_layer_fwd and _native_multi_head_attention are ATen's
// own kernels (at::native::transformer_encoder_layer_forward, which PyTorch
// registers for the CPU and CUDA alike, and native_multi_head_attention_cpu),
// exported by libtorch and written in ATen ops that dispatch to kiln: the
// products and layer norms on kiln's library and compiled paths, and the two
// ops ATen's CPU kernels write on raw pointers, _transform_bias_rescale_qkv
// (below) and _masked_softmax (masked_softmax.h), composed of kiln ops. So the
// numbers are the CPU's algorithm step for step, masks and their types
// included (a float mask is made boolean, as the CPU does). Kiln checks that
// every tensor argument is on the input's device first, which ATen's kernels
// leave to the ops inside. Nested inputs reach the same kernels through the
// NestedTensorPrivateUse1 key (aten/native/nested_tensors.cc).
//
// _transform_bias_rescale_qkv: qkv [B, T, 3 * D] plus its bias [3 * D], split
// into q, k, v of [B, num_heads, T, D / num_heads] each, q multiplied by
// 1 / sqrt(D / num_heads), each result rounded once to the dtype from its
// op-math type (float for float16 and bfloat16), as the CPU's are. The three
// results are views of one fresh [3, B, num_heads, T, D / num_heads] tensor,
// as the CPU's are. float32, float64, float16, bfloat16.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor, at::Tensor> transform_bias_rescale_qkv(const at::Tensor& qkv,
                                                                          const at::Tensor& qkv_bias,
                                                                          int64_t num_heads);

std::tuple<at::Tensor, at::Tensor> native_multi_head_attention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t embed_dim,
    int64_t num_heads, const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
    const at::Tensor& proj_weight, const at::Tensor& proj_bias, const std::optional<at::Tensor>& mask,
    bool need_weights, bool average_attn_weights, std::optional<int64_t> mask_type);

at::Tensor transformer_encoder_layer_forward(
    const at::Tensor& src, int64_t embed_dim, int64_t num_heads, const at::Tensor& qkv_weight,
    const at::Tensor& qkv_bias, const at::Tensor& proj_weight, const at::Tensor& proj_bias, bool use_gelu,
    bool norm_first, double eps, const at::Tensor& norm_weight_1, const at::Tensor& norm_bias_1,
    const at::Tensor& norm_weight_2, const at::Tensor& norm_bias_2, const at::Tensor& ffn_weight_1,
    const at::Tensor& ffn_bias_1, const at::Tensor& ffn_weight_2, const at::Tensor& ffn_bias_2,
    const std::optional<at::Tensor>& mask, std::optional<int64_t> mask_type);

}  // namespace kiln::torch_integration::compiled
