// The attention family's registration table: the fused attention kernels
// PyTorch's CPU path calls.
#include <torch/library.h>

#include "kiln/aten/compiled/nn/attention/attention_for_cpu_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_dot_product_flash_attention_for_cpu", TORCH_FN(compiled::flash_attention_for_cpu));
  m.impl("_scaled_dot_product_flash_attention_for_cpu_backward",
         TORCH_FN(compiled::flash_attention_for_cpu_backward));
}

}  // namespace kiln::torch_integration
