// Compiled spatial nn ops: padding, upsampling (registered in
// aten/registration_spatial.cc). See the .cc files for semantics.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor upsample_nearest1d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales);
at::Tensor& upsample_nearest1d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales, at::Tensor& out);
at::Tensor upsample_nearest1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales);
at::Tensor& upsample_nearest1d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales, at::Tensor& grad_input);
at::Tensor upsample_nearest2d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& upsample_nearest2d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out);
at::Tensor upsample_nearest2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& upsample_nearest2d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input);
at::Tensor upsample_nearest3d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& upsample_nearest3d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out);
at::Tensor upsample_nearest3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& upsample_nearest3d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input);
at::Tensor _upsample_nearest_exact1d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales);
at::Tensor& _upsample_nearest_exact1d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales, at::Tensor& out);
at::Tensor _upsample_nearest_exact1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales);
at::Tensor& _upsample_nearest_exact1d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales, at::Tensor& grad_input);
at::Tensor _upsample_nearest_exact2d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& _upsample_nearest_exact2d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out);
at::Tensor _upsample_nearest_exact2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& _upsample_nearest_exact2d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input);
at::Tensor _upsample_nearest_exact3d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& _upsample_nearest_exact3d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out);
at::Tensor _upsample_nearest_exact3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& _upsample_nearest_exact3d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input);
at::Tensor upsample_linear1d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales);
at::Tensor& upsample_linear1d_out(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales, at::Tensor& out);
at::Tensor upsample_linear1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales);
at::Tensor& upsample_linear1d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales, at::Tensor& grad_input);
at::Tensor upsample_bilinear2d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& upsample_bilinear2d_out(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out);
at::Tensor upsample_bilinear2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& upsample_bilinear2d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input);
at::Tensor upsample_trilinear3d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& upsample_trilinear3d_out(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out);
at::Tensor upsample_trilinear3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& upsample_trilinear3d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input);
at::Tensor upsample_bicubic2d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& upsample_bicubic2d_out(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out);
at::Tensor upsample_bicubic2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w);
at::Tensor& upsample_bicubic2d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input);

// Padding (padding_ops.cc).
at::Tensor reflection_pad1d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad1d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor reflection_pad1d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad1d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);
at::Tensor reflection_pad2d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad2d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor reflection_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);
at::Tensor reflection_pad3d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad3d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor reflection_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);
at::Tensor replication_pad1d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad1d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor replication_pad1d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad1d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);
at::Tensor replication_pad2d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad2d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor replication_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);
at::Tensor replication_pad3d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad3d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor replication_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);

// im2col and col2im (im2col_ops.cc).
at::Tensor im2col(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                  at::IntArrayRef padding, at::IntArrayRef stride);
at::Tensor& im2col_out(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                       at::IntArrayRef padding, at::IntArrayRef stride, at::Tensor& out);
at::Tensor col2im(const at::Tensor& self, at::IntArrayRef output_size, at::IntArrayRef kernel_size,
                  at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride);
at::Tensor& col2im_out(const at::Tensor& self, at::IntArrayRef output_size,
                       at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                       at::IntArrayRef padding, at::IntArrayRef stride, at::Tensor& out);

// channel_shuffle (channel_shuffle_ops.cc).
at::Tensor channel_shuffle(const at::Tensor& self, int64_t groups);

// adaptive_max_pool2d (adaptive_max_pool_ops.cc).
std::tuple<at::Tensor, at::Tensor> adaptive_max_pool2d(const at::Tensor& self,
                                                       at::IntArrayRef output_size);
std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool2d_out(const at::Tensor& self,
                                                             at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices);
at::Tensor adaptive_max_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& indices);
at::Tensor& adaptive_max_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input);

// max_unpool2d and max_unpool3d (max_unpool_ops.cc).
// output[n, c][indices[n, c, ...]] = (or +=, when `accumulate`) self[n, c, ...]
// over (N, C, *output_size) planes (unbatched tensors too), one element at a
// time in self's row-major order; indices outside the plane write nothing
// (accumulating) or an unspecified element of the plane. Also the backward of
// 3-D max pooling.
void plane_scatter(const char* op_name, const at::Tensor& self, const at::Tensor& indices,
                   at::IntArrayRef output_size, const at::Tensor& output, bool accumulate);
at::Tensor max_unpool2d(const at::Tensor& self, const at::Tensor& indices,
                        at::IntArrayRef output_size);
at::Tensor& max_unpool2d_out(const at::Tensor& self, const at::Tensor& indices,
                             at::IntArrayRef output_size, at::Tensor& out);
at::Tensor max_unpool3d(const at::Tensor& self, const at::Tensor& indices,
                        at::IntArrayRef output_size, at::IntArrayRef stride,
                        at::IntArrayRef padding);
at::Tensor& max_unpool3d_out(const at::Tensor& self, const at::Tensor& indices,
                             at::IntArrayRef output_size, at::IntArrayRef stride,
                             at::IntArrayRef padding, at::Tensor& out);

// 3-D max pooling and adaptive 3-D max pooling (pool3d_ops.cc).
std::tuple<at::Tensor, at::Tensor> max_pool3d_with_indices(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode);
std::tuple<at::Tensor&, at::Tensor&> max_pool3d_with_indices_out(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, at::Tensor& out,
    at::Tensor& indices);
at::Tensor max_pool3d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, const at::Tensor& indices);
at::Tensor& max_pool3d_with_indices_backward_out(
    const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
    const at::Tensor& indices, at::Tensor& grad_input);
std::tuple<at::Tensor, at::Tensor> adaptive_max_pool3d(const at::Tensor& self,
                                                       at::IntArrayRef output_size);
std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool3d_out(const at::Tensor& self,
                                                             at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices);
at::Tensor adaptive_max_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& indices);
at::Tensor& adaptive_max_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input);

// _adaptive_avg_pool3d and its backward (adaptive_avg_pool3d_ops.cc).
at::Tensor adaptive_avg_pool3d(const at::Tensor& self, at::IntArrayRef output_size);
at::Tensor& adaptive_avg_pool3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                    at::Tensor& out);
at::Tensor adaptive_avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self);
at::Tensor& adaptive_avg_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             at::Tensor& grad_input);

// avg_pool3d and its backward (avg_pool3d_ops.cc).
at::Tensor avg_pool3d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override);
at::Tensor& avg_pool3d_out(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                           at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, at::Tensor& out);
at::Tensor avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               at::IntArrayRef kernel_size, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override);
at::Tensor& avg_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                                    std::optional<int64_t> divisor_override, at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
