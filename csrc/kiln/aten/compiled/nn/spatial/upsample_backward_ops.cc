// No header of its own: defines the backwards declared in upsample_ops.h.
// The upsampling ops' backwards (forwards and semantics in upsample_ops.cc):
// each grad_output element times its taps' weights is added at the taps'
// input elements, in grad_output's order, in a float32 buffer for the half
// types (rounded once), with float32 weights: the CPU's backward kernels.
#include <ATen/ops/_upsample_nearest_exact1d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_backward_meta.h>
#include <ATen/ops/upsample_bicubic2d_backward_meta.h>
#include <ATen/ops/upsample_bilinear2d_backward_meta.h>
#include <ATen/ops/upsample_linear1d_backward_meta.h>
#include <ATen/ops/upsample_nearest1d_backward_meta.h>
#include <ATen/ops/upsample_nearest2d_backward_meta.h>
#include <ATen/ops/upsample_nearest3d_backward_meta.h>
#include <ATen/ops/upsample_trilinear3d_backward_meta.h>

#include "kiln/aten/compiled/nn/spatial/upsample_ops.h"
#include "kiln/aten/compiled/launch/structured_run.h"
#include "kiln/aten/compiled/nn/spatial/upsample_tables.h"

namespace kiln::torch_integration::compiled {
namespace {

using Scales = std::initializer_list<std::optional<double>>;

void upsample_backward(const char* op_name, Interpolation mode, const at::Tensor& grad_output,
                       at::IntArrayRef output_size, at::IntArrayRef input_size, bool align_corners,
                       Scales scales, const at::Tensor& grad_input) {
  const at::ScalarType type = grad_output.scalar_type();
  // The op's name without its "aten::" namespace, as a dispatch name.
  TORCH_CHECK_NOT_IMPLEMENTED(is_half_or_float(type), "\"", op_name + 6, "\" not implemented for '",
                              c10::toString(type), "'");
  const at::ScalarType weights = wide_weights(type);
  spatial_scatter_add(
      op_name, grad_output, grad_input,
      upsample_axes(mode, input_size, output_size, align_corners, scales, type, weights), weights,
      /*float_buffer=*/true);
}

}  // namespace

at::Tensor upsample_nearest1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales) {
  return structured<at::meta::structured_upsample_nearest1d_backward>(
      nullptr, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_nearest1d_backward", Interpolation::kNearest, grad_output, output_size,
                          input_size, false, {scales}, result);
      },
      grad_output, output_size, input_size, scales);
}

at::Tensor& upsample_nearest1d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales, at::Tensor& grad_input) {
  structured<at::meta::structured_upsample_nearest1d_backward>(
      &grad_input, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_nearest1d_backward", Interpolation::kNearest, grad_output, output_size,
                          input_size, false, {scales}, result);
      },
      grad_output, output_size, input_size, scales);
  return grad_input;
}

at::Tensor upsample_nearest2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured_upsample_nearest2d_backward>(
      nullptr, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_nearest2d_backward", Interpolation::kNearest, grad_output, output_size,
                          input_size, false, {scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, scales_h, scales_w);
}

at::Tensor& upsample_nearest2d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input) {
  structured<at::meta::structured_upsample_nearest2d_backward>(
      &grad_input, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_nearest2d_backward", Interpolation::kNearest, grad_output, output_size,
                          input_size, false, {scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, scales_h, scales_w);
  return grad_input;
}

at::Tensor upsample_nearest3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured_upsample_nearest3d_backward>(
      nullptr, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_nearest3d_backward", Interpolation::kNearest, grad_output, output_size,
                          input_size, false, {scales_d, scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, scales_d, scales_h, scales_w);
}

at::Tensor& upsample_nearest3d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input) {
  structured<at::meta::structured_upsample_nearest3d_backward>(
      &grad_input, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_nearest3d_backward", Interpolation::kNearest, grad_output, output_size,
                          input_size, false, {scales_d, scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, scales_d, scales_h, scales_w);
  return grad_input;
}

at::Tensor _upsample_nearest_exact1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales) {
  return structured<at::meta::structured__upsample_nearest_exact1d_backward>(
      nullptr, [&](const at::Tensor& result) {
        upsample_backward("aten::_upsample_nearest_exact1d_backward", Interpolation::kNearestExact, grad_output, output_size,
                          input_size, false, {scales}, result);
      },
      grad_output, output_size, input_size, scales);
}

at::Tensor& _upsample_nearest_exact1d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales, at::Tensor& grad_input) {
  structured<at::meta::structured__upsample_nearest_exact1d_backward>(
      &grad_input, [&](const at::Tensor& result) {
        upsample_backward("aten::_upsample_nearest_exact1d_backward", Interpolation::kNearestExact, grad_output, output_size,
                          input_size, false, {scales}, result);
      },
      grad_output, output_size, input_size, scales);
  return grad_input;
}

at::Tensor _upsample_nearest_exact2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured__upsample_nearest_exact2d_backward>(
      nullptr, [&](const at::Tensor& result) {
        upsample_backward("aten::_upsample_nearest_exact2d_backward", Interpolation::kNearestExact, grad_output, output_size,
                          input_size, false, {scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, scales_h, scales_w);
}

at::Tensor& _upsample_nearest_exact2d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input) {
  structured<at::meta::structured__upsample_nearest_exact2d_backward>(
      &grad_input, [&](const at::Tensor& result) {
        upsample_backward("aten::_upsample_nearest_exact2d_backward", Interpolation::kNearestExact, grad_output, output_size,
                          input_size, false, {scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, scales_h, scales_w);
  return grad_input;
}

at::Tensor _upsample_nearest_exact3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured__upsample_nearest_exact3d_backward>(
      nullptr, [&](const at::Tensor& result) {
        upsample_backward("aten::_upsample_nearest_exact3d_backward", Interpolation::kNearestExact, grad_output, output_size,
                          input_size, false, {scales_d, scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, scales_d, scales_h, scales_w);
}

at::Tensor& _upsample_nearest_exact3d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input) {
  structured<at::meta::structured__upsample_nearest_exact3d_backward>(
      &grad_input, [&](const at::Tensor& result) {
        upsample_backward("aten::_upsample_nearest_exact3d_backward", Interpolation::kNearestExact, grad_output, output_size,
                          input_size, false, {scales_d, scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, scales_d, scales_h, scales_w);
  return grad_input;
}

at::Tensor upsample_linear1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales) {
  return structured<at::meta::structured_upsample_linear1d_backward>(
      nullptr, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_linear1d_backward", Interpolation::kLinear, grad_output, output_size,
                          input_size, align_corners, {scales}, result);
      },
      grad_output, output_size, input_size, align_corners, scales);
}

at::Tensor& upsample_linear1d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales, at::Tensor& grad_input) {
  structured<at::meta::structured_upsample_linear1d_backward>(
      &grad_input, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_linear1d_backward", Interpolation::kLinear, grad_output, output_size,
                          input_size, align_corners, {scales}, result);
      },
      grad_output, output_size, input_size, align_corners, scales);
  return grad_input;
}

at::Tensor upsample_bilinear2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured_upsample_bilinear2d_backward>(
      nullptr, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_bilinear2d_backward", Interpolation::kLinear, grad_output, output_size,
                          input_size, align_corners, {scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, align_corners, scales_h, scales_w);
}

at::Tensor& upsample_bilinear2d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input) {
  structured<at::meta::structured_upsample_bilinear2d_backward>(
      &grad_input, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_bilinear2d_backward", Interpolation::kLinear, grad_output, output_size,
                          input_size, align_corners, {scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, align_corners, scales_h, scales_w);
  return grad_input;
}

at::Tensor upsample_trilinear3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured_upsample_trilinear3d_backward>(
      nullptr, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_trilinear3d_backward", Interpolation::kLinear, grad_output, output_size,
                          input_size, align_corners, {scales_d, scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, align_corners, scales_d, scales_h, scales_w);
}

at::Tensor& upsample_trilinear3d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input) {
  structured<at::meta::structured_upsample_trilinear3d_backward>(
      &grad_input, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_trilinear3d_backward", Interpolation::kLinear, grad_output, output_size,
                          input_size, align_corners, {scales_d, scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, align_corners, scales_d, scales_h, scales_w);
  return grad_input;
}

at::Tensor upsample_bicubic2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured_upsample_bicubic2d_backward>(
      nullptr, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_bicubic2d_backward", Interpolation::kCubic, grad_output, output_size,
                          input_size, align_corners, {scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, align_corners, scales_h, scales_w);
}

at::Tensor& upsample_bicubic2d_backward_out(const at::Tensor& grad_output, at::IntArrayRef output_size,
    at::IntArrayRef input_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& grad_input) {
  structured<at::meta::structured_upsample_bicubic2d_backward>(
      &grad_input, [&](const at::Tensor& result) {
        upsample_backward("aten::upsample_bicubic2d_backward", Interpolation::kCubic, grad_output, output_size,
                          input_size, align_corners, {scales_h, scales_w}, result);
      },
      grad_output, output_size, input_size, align_corners, scales_h, scales_w);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
