#include "kiln/aten/compiled/nn/attention/transformer_fast_path.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/ops/_native_multi_head_attention_native.h>
#include <ATen/ops/_transformer_encoder_layer_fwd_native.h>
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>

#include <cmath>

#include "kiln/aten/device_checks.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

// 1 / sqrt(head_dim) as the CPU's kernel has it: in the dtype's op-math
// type (float for float16 and bfloat16), which holds it exactly.
double query_scale(at::ScalarType type, int64_t head_dim) {
  double scale = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, type, "transform_bias_rescale_qkv", [&] {
    using math_t = at::opmath_type<scalar_t>;
    scale = static_cast<double>(static_cast<math_t>(1.0 / std::sqrt(static_cast<math_t>(head_dim))));
  });
  return scale;
}

void check_optional_device(c10::Device device, const std::optional<at::Tensor>& tensor, const char* op_name) {
  if (tensor.has_value() && tensor->defined()) check_same_device(device, *tensor, op_name);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> transform_bias_rescale_qkv(const at::Tensor& qkv,
                                                                          const at::Tensor& qkv_bias,
                                                                          int64_t num_heads) {
  record_static_op("aten::_transform_bias_rescale_qkv", OpPath::kNative);
  check_same_device(qkv.device(), qkv_bias, "aten::_transform_bias_rescale_qkv");
  TORCH_CHECK(qkv.dim() == 3, "_transform_bias_rescale_qkv: expected qkv of shape [batch, length, 3 * embed_dim], "
              "got ", qkv.sizes());
  const int64_t batch = qkv.size(0);
  const int64_t length = qkv.size(1);
  const int64_t embed_dim = qkv.size(2) / 3;
  TORCH_CHECK(num_heads > 0 && embed_dim % num_heads == 0, "_transform_bias_rescale_qkv: embed_dim ", embed_dim,
              " (qkv's last size / 3) must divide evenly by num_heads (", num_heads, ")");
  TORCH_CHECK(qkv.size(2) % 3 == 0, "_transform_bias_rescale_qkv: qkv's last size (", qkv.size(2),
              ") must be 3 * embed_dim");
  TORCH_CHECK(qkv_bias.dim() == 1 && qkv_bias.size(0) == qkv.size(2),
              "_transform_bias_rescale_qkv: expected qkv_bias of shape [", qkv.size(2), "], got ", qkv_bias.sizes());
  TORCH_CHECK(qkv_bias.scalar_type() == qkv.scalar_type(), "_transform_bias_rescale_qkv: expected qkv_bias of dtype ",
              qkv.scalar_type(), " (qkv's), got ", qkv_bias.scalar_type());
  const int64_t head_dim = embed_dim / num_heads;
  const double scale = query_scale(qkv.scalar_type(), head_dim);
  // The results written straight into their [3, B, heads, T, head_dim]
  // layout: `split` is that buffer seen as qkv's [B, T, 3, heads, head_dim].
  at::Tensor buffer = at::empty({3, batch, num_heads, length, head_dim}, qkv.options());
  const at::Tensor split = buffer.permute({1, 3, 0, 2, 4});
  const at::Tensor parts = qkv.reshape({batch, length, 3, num_heads, head_dim});
  const at::Tensor biases = qkv_bias.view({3, num_heads, head_dim});
  // k and v: the sums, each rounded once to the dtype.
  at::Tensor key_value = split.narrow(2, 1, 2);
  at::add_out(key_value, parts.narrow(2, 1, 2), biases.narrow(0, 1, 2));
  // q: (q + bias) * scale in the op-math type, rounded once to the dtype, as
  // the CPU computes it (for float16 and bfloat16 the sum stays in float).
  at::Tensor query_sum =
      at::add(parts.select(2, 0), biases.select(0, 0).to(at::toOpMathType(qkv.scalar_type())));
  split.select(2, 0).copy_(query_sum.mul_(scale));
  return {buffer.select(0, 0), buffer.select(0, 1), buffer.select(0, 2)};
}

std::tuple<at::Tensor, at::Tensor> native_multi_head_attention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t embed_dim,
    int64_t num_heads, const at::Tensor& qkv_weight, const at::Tensor& qkv_bias,
    const at::Tensor& proj_weight, const at::Tensor& proj_bias, const std::optional<at::Tensor>& mask,
    bool need_weights, bool average_attn_weights, std::optional<int64_t> mask_type) {
  constexpr const char* kName = "aten::_native_multi_head_attention";
  record_static_op(kName, OpPath::kNative);
  for (const at::Tensor* tensor : {&key, &value, &qkv_weight, &qkv_bias, &proj_weight, &proj_bias}) {
    check_same_device(query.device(), *tensor, kName);
  }
  check_optional_device(query.device(), mask, kName);
  return at::native::native_multi_head_attention_cpu(query, key, value, embed_dim, num_heads, qkv_weight, qkv_bias,
                                                     proj_weight, proj_bias, mask, need_weights,
                                                     average_attn_weights, mask_type);
}

at::Tensor transformer_encoder_layer_forward(
    const at::Tensor& src, int64_t embed_dim, int64_t num_heads, const at::Tensor& qkv_weight,
    const at::Tensor& qkv_bias, const at::Tensor& proj_weight, const at::Tensor& proj_bias, bool use_gelu,
    bool norm_first, double eps, const at::Tensor& norm_weight_1, const at::Tensor& norm_bias_1,
    const at::Tensor& norm_weight_2, const at::Tensor& norm_bias_2, const at::Tensor& ffn_weight_1,
    const at::Tensor& ffn_bias_1, const at::Tensor& ffn_weight_2, const at::Tensor& ffn_bias_2,
    const std::optional<at::Tensor>& mask, std::optional<int64_t> mask_type) {
  constexpr const char* kName = "aten::_transformer_encoder_layer_fwd";
  record_static_op(kName, OpPath::kNative);
  for (const at::Tensor* tensor : {&qkv_weight, &qkv_bias, &proj_weight, &proj_bias, &norm_weight_1, &norm_bias_1,
                                   &norm_weight_2, &norm_bias_2, &ffn_weight_1, &ffn_bias_1, &ffn_weight_2,
                                   &ffn_bias_2}) {
    check_same_device(src.device(), *tensor, kName);
  }
  check_optional_device(src.device(), mask, kName);
  return at::native::transformer_encoder_layer_forward(
      src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu, norm_first, eps,
      norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2,
      mask, mask_type);
}

}  // namespace kiln::torch_integration::compiled
