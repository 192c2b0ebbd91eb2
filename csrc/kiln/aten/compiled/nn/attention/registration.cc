// The attention family's registration table: the fused attention kernels
// PyTorch's CPU path calls.
#include <torch/library.h>

#include "kiln/aten/compiled/nn/attention/attention_for_cpu_ops.h"
#include "kiln/aten/compiled/nn/attention/multi_head_attention.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_dot_product_flash_attention_for_cpu", TORCH_FN(compiled::flash_attention_for_cpu));
  m.impl("_scaled_dot_product_flash_attention_for_cpu_backward",
         TORCH_FN(compiled::flash_attention_for_cpu_backward));
  m.impl("_native_multi_head_attention", TORCH_FN(compiled::native_multi_head_attention));
}

}  // namespace kiln::torch_integration
