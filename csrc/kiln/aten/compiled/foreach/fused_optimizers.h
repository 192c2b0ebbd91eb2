// The fused Adam and AdamW steps: aten::_fused_adam_ and aten::_fused_adamw_
// (both the float-lr and the Tensor-lr overloads), what
// torch.optim.Adam/AdamW(fused=True) call, and what Hugging Face's Trainer
// asks for by default (optim="adamw_torch_fused" with torch 2.8 and later).
//
// CUDA, XPU and the CPU run these as one multi-tensor kernel. Kiln composes
// each step from its foreach ops (foreach_ops.h): eight or so stream tasks per
// step whatever the number of parameters, each one launch replayed over all
// of them. The bias corrections are computed on the host in double, as the
// CPU kernel computes them, from the step counts read back in one transfer:
// a wait for the device per step (CUDA's kernel reads them on the device). A
// device-side version (0-dim tensors per parameter, as torch's capturable
// Adam keeps them) was 1.7 to 3 times slower, since per-parameter operands
// keep the foreach ops from replaying. found_inf (AMP's GradScaler) is read
// too, as the CPU kernel does: when it is 1 the step changes nothing.
//
// Semantics follow the fused kernels: grads are divided by grad_scale in
// place (the fused kernels store the unscaled gradient); maximize negates the
// gradient the moments see, not the stored one; state_steps are read, not
// incremented (torch.optim increments them before the call); AdamW decays
// the parameter by lr * weight_decay before the update, Adam adds
// weight_decay * param to the gradient. Intermediates are in the parameters'
// dtype (the fused kernels compute Half and BFloat16 in float).
//
// Errors (lists of different lengths, a tensor off the kiln device, an lr
// tensor on another device) are raised before any tensor changes.
#pragma once

#include <torch/library.h>

namespace kiln::torch_integration::compiled {

// Registers _fused_adam_ and _fused_adamw_ (and their tensor_lr overloads)
// for PrivateUse1.
void register_fused_optimizers(torch::Library& library);

}  // namespace kiln::torch_integration::compiled
