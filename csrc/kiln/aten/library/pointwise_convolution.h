// 1x1 convolutions as matrix products.
//
// A 1x1 convolution with no padding is a product over channels
// at every position: out[n, :, p] = W @ x[n, :, p], with W the weight viewed
// as C_out x C_in. Run as PyTorch's CPU convolution, it costs more than the
// product: one thread's ATen takes its per-sample product (slow_conv2d),
// which with few positions per sample (the last stage of an image model: 2x2
// or 4x4) reads the whole weight for little work, 7-9x slower than one
// product over the batch; oneDNN's result is also copied into the device
// output. Here the convolution is Kiln's own product ops on the device
// tensors, split over the threads like any product (library_threads.h):
//   channels last            one product, N*H*W x C, straight into the output;
//   NCHW, many positions     one product per sample (bmm), straight into the
//                            output; the weight gradient sums the per-sample
//                            products;
//   NCHW, few positions      the batch folded into one product, the input's
//                            and the result's channel and batch dims swapped
//                            by copies (small activations beside the weight).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <array>
#include <optional>
#include <tuple>

namespace kiln::torch_integration::library {

// Whether convolution(input, weight, ...) with these arguments is computed by
// the functions below: 2-D, kernel 1x1, no padding, one group, not
// transposed, one floating dtype. With a stride above 1 (a ResNet's
// downsampling shortcut) the positions read are copied out first, and the
// input gradient is scattered back into a zeroed tensor.
bool is_pointwise_convolution(const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
                              c10::IntArrayRef padding, bool transposed, c10::IntArrayRef output_padding,
                              int64_t groups);

// Whether pointwise_convolution computes its result straight into `output`
// (channels last, or NCHW with many positions), rather than copying it in.
// For the compiled path's choice of layouts, as convolution_writes_output_directly.
bool pointwise_convolution_writes_output_directly(const at::Tensor& input, const at::Tensor& output);

// The convolution into `output` (allocated by the caller in the layout the
// CPU's convolution returns), by Kiln's mm/addmm on the device.
void pointwise_convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                           c10::IntArrayRef stride, at::Tensor& output);

// Its input, weight and bias gradients (those `output_mask` asks for) into
// the given tensors (undefined where not asked for).
void pointwise_convolution_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
                                    c10::IntArrayRef stride, at::Tensor& grad_input, at::Tensor& grad_weight,
                                    at::Tensor& grad_bias);

}  // namespace kiln::torch_integration::library
