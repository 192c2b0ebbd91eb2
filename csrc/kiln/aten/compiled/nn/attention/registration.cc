// The attention family's registration table: the native multi-head attention
// of nn.MultiheadAttention's fast path. (Fused scaled-dot-product attention is
// on the library path: library/attention.cc.)
#include <torch/library.h>

#include "kiln/aten/compiled/nn/attention/multi_head_attention.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_native_multi_head_attention", TORCH_FN(compiled::native_multi_head_attention));
}

}  // namespace kiln::torch_integration
