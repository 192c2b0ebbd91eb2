// Upsampling, forward (upsample_ops.cc) and backward (upsample_backward_ops.cc):
// nearest, nearest-exact, linear, bilinear, trilinear and bicubic. See the
// .cc files for semantics.
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

}  // namespace kiln::torch_integration::compiled
