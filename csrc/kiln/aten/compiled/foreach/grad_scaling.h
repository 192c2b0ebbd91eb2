// The two ops of AMP's gradient scaler (torch.amp.GradScaler, what fp16
// mixed precision in accelerate and Hugging Face's Trainer uses), on the
// device with no host wait, as CUDA runs them:
//
// - _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale):
//   multiplies every gradient by inv_scale in place and sets found_inf to 1
//   when any of them held an inf or a NaN (found_inf is never reset here).
// - _amp_update_scale_(scale, growth_tracker, found_inf, growth, backoff,
//   interval): after an overflow the scale shrinks by `backoff` and the
//   tracker restarts; after `interval` clean steps in a row it grows by
//   `growth` (unless that overflows float) and the tracker restarts;
//   otherwise the tracker counts one more clean step. Returns scale.
//
// Each is composed of Kiln's pointwise, reduction and foreach ops (each of
// which takes its own path); the decisions are device-side where() selects,
// so neither op reads a value back to the host.
#pragma once

#include <torch/library.h>

namespace kiln::torch_integration::compiled {

// Registers both ops for PrivateUse1.
void register_grad_scaling(torch::Library& library);

}  // namespace kiln::torch_integration::compiled
