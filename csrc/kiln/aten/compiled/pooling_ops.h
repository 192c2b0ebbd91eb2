// Compiled 2-D pooling: max pooling with indices, average pooling and
// adaptive average pooling, forward and backward, over NCHW and unbatched
// CHW tensors of any strides (channels_last ones keep that layout, as on the
// CPU). Registered in aten/registration_pooling.cc.
//
// Shapes, parameters and their errors are ATen's: the structured meta
// functions of max_pool2d_with_indices, avg_pool2d and their backwards, and
// the checks of ATen's CPU adaptive pooling. Dtypes are the CPU's: max pooling
// takes every integer and floating dtype but bool, its backward floating
// ones; average pooling floating and int64; adaptive pooling floating only.
//
// Semantics follow ATen's CPU kernels for contiguous tensors:
//  - max pooling: the first maximum of the window in row-major order, a NaN
//    wins (the last NaN); the index is h * W + w within the input plane;
//  - averages sum in float32 for half types (float64 for float64, int64 for
//    int64) and round once; adaptive pooling divides by the window height,
//    then by its width;
//  - backward of the averages adds each output's share, rounded to the
//    tensor's dtype, in the CPU's order (rows of outputs, then columns), so
//    half-precision results match the CPU's; max-pool backward adds the
//    gradient at each index, ignoring indices outside the input plane.
// Windows larger than kMaxTapsPerLaunch (pooling_launch.h) take several
// launches. Every call is asynchronous on the current stream.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode);
std::tuple<at::Tensor&, at::Tensor&> max_pool2d_with_indices_out(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, at::Tensor& out,
    at::Tensor& indices);
at::Tensor max_pool2d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, const at::Tensor& indices);
at::Tensor& max_pool2d_with_indices_backward_out(const at::Tensor& grad_output,
                                                 const at::Tensor& self,
                                                 at::IntArrayRef kernel_size,
                                                 at::IntArrayRef stride, at::IntArrayRef padding,
                                                 at::IntArrayRef dilation, bool ceil_mode,
                                                 const at::Tensor& indices,
                                                 at::Tensor& grad_input);

at::Tensor avg_pool2d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override);
at::Tensor& avg_pool2d_out(const at::Tensor& self, at::IntArrayRef kernel_size,
                           at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override,
                           at::Tensor& out);
at::Tensor avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               at::IntArrayRef kernel_size, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override);
at::Tensor& avg_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode,
                                    bool count_include_pad,
                                    std::optional<int64_t> divisor_override,
                                    at::Tensor& grad_input);

// _adaptive_avg_pool2d (adaptive_avg_pool2d is composite: a 1x1 output is a
// mean over H and W there) and the CPU's adaptive_avg_pool2d.out.
at::Tensor adaptive_avg_pool2d(const at::Tensor& self, at::IntArrayRef output_size);
at::Tensor& adaptive_avg_pool2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                    at::Tensor& out);
at::Tensor adaptive_avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self);

// grad_input = 0, then grad_output added at each index (h * W + w within its
// plane); floating dtypes. Also the backward of adaptive max pooling.
void max_pool2d_backward_into(const at::Tensor& grad_output, const at::Tensor& indices,
                              const at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
