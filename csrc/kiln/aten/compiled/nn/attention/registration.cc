// The attention family's registration table: the ops of the inference fast
// path of nn.MultiheadAttention and nn.TransformerEncoderLayer
// (transformer_fast_path.h, masked_softmax.h). (Fused scaled-dot-product
// attention is on the library path: library/attention.cc.)
#include <torch/library.h>

#include "kiln/aten/compiled/nn/attention/masked_softmax.h"
#include "kiln/aten/compiled/nn/attention/transformer_fast_path.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(compiled::transformer_encoder_layer_forward));
  m.impl("_native_multi_head_attention", TORCH_FN(compiled::native_multi_head_attention));
  m.impl("_transform_bias_rescale_qkv", TORCH_FN(compiled::transform_bias_rescale_qkv));
  m.impl("_masked_softmax", TORCH_FN(compiled::masked_softmax));
  m.impl("_masked_softmax_backward", TORCH_FN(compiled::masked_softmax_backward));
}

}  // namespace kiln::torch_integration
