// Compiled _ctc_loss and _ctc_loss_backward (the IntArrayRef lengths form
// that torch.nn.functional.ctc_loss reaches). Registered in
// aten/compiled/nn/loss/registration.cc.
//
// As ATen's CPU kernel (Graves et al., eq. 6-16): the extended target l' puts
// a blank around every label; log_alpha runs forward over time, one compiled
// pointwise kernel per step over (sample, s), each step the log-sum-exp of
// the up to three predecessors plus log_probs at l'(s); the loss is minus the
// log-sum-exp of the last two alphas at each sample's input length. The
// backward runs log_beta the same way backward in time, collects log(sum of
// alpha * beta) per class one state at a time in the CPU's order (one
// pointwise kernel per state) and forms exp(lp) - exp(collected + nll - lp),
// times grad;
// zero past a sample's input length, and for an infinite loss with
// zero_infinity. Lengths are host lists, so every check is the CPU's, before
// anything is queued. Entries of log_alpha the CPU leaves unwritten (past the
// input or target length) are -inf here. Float32 and float64, as the CPU.
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                                            at::IntArrayRef input_lengths,
                                            at::IntArrayRef target_lengths, int64_t blank,
                                            bool zero_infinity);
at::Tensor ctc_loss_backward(const at::Tensor& grad, const at::Tensor& log_probs,
                             const at::Tensor& targets, at::IntArrayRef input_lengths,
                             at::IntArrayRef target_lengths, const at::Tensor& neg_log_likelihood,
                             const at::Tensor& log_alpha, int64_t blank, bool zero_infinity);

}  // namespace kiln::torch_integration::compiled
