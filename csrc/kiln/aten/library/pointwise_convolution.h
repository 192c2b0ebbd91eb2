// 1x1 convolutions as matrix products.
//
// A 1x1 convolution with stride 1 and no padding is a product over channels
// at every position: out[n, :, p] = W @ x[n, :, p], with W the weight viewed
// as C_out x C_in. Run as PyTorch's CPU convolution, it costs more than the
// product: one thread's ATen takes its per-sample product (im2col-free
// slow_conv2d), which reads the whole weight once per sample, and with few
// positions per sample (the last stage of an image model: 2x2 or 4x4) that
// is 7-9x slower than one product over the whole batch; oneDNN's result is
// also copied into the device output. Here the convolution is Kiln's own
// product ops on the device tensors, with the batch folded into the product:
// in channels last, one product straight into the output (x is N*H*W x C_in
// in memory already); in NCHW, the input's and the result's channel and
// batch dims are swapped by copies, which cost little where this path is
// taken (few positions, so small activations beside the weight).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <array>
#include <optional>
#include <tuple>

namespace kiln::torch_integration::library {

// A 1x1 convolution is one product per sample, (C_out x C_in) @ (C_in x
// H_out*W_out), which reads the whole weight for H_out*W_out columns: with
// fewer output positions than this, folding the batch into one product wins.
constexpr int64_t kDirectFewestPositions = 64;

// Whether convolution(input, weight, ...) with these arguments is computed by
// the functions below: 2-D, kernel 1x1, stride 1, no padding, one group, not
// transposed, one floating dtype, and either channels-last input or fewer
// than `kDirectFewestPositions` output positions (more, and ATen's per-sample
// product written straight into the output is as fast: convolution.cc).
bool is_pointwise_convolution(const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
                              c10::IntArrayRef padding, bool transposed, c10::IntArrayRef output_padding,
                              int64_t groups);

// The convolution into `output` (allocated by the caller in the layout the
// CPU's convolution returns), by Kiln's mm/addmm on the device.
void pointwise_convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                           at::Tensor& output);

// Its input, weight and bias gradients (those `output_mask` asks for) into
// the given tensors (undefined where not asked for).
void pointwise_convolution_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
                                    at::Tensor& grad_input, at::Tensor& grad_weight, at::Tensor& grad_bias);

}  // namespace kiln::torch_integration::library
