// The foreach family's registration table: torch._foreach_* over pointwise
// ops, one stream task per call (foreach_ops.h).
#include <torch/library.h>

#include "kiln/aten/compiled/foreach/foreach_ops.h"
#include "kiln/aten/compiled/foreach/fused_optimizers.h"
#include "kiln/aten/compiled/foreach/grad_scaling.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // torch._foreach_* over pointwise ops: one stream task per call (foreach_ops.h).
  compiled::register_foreach_ops(m);
  // torch.optim.Adam/AdamW(fused=True): composed of the foreach ops (fused_optimizers.h).
  compiled::register_fused_optimizers(m);
  // torch.amp.GradScaler's unscale and scale update (grad_scaling.h).
  compiled::register_grad_scaling(m);
}

}  // namespace kiln::torch_integration
