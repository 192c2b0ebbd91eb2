// Upsampling: nearest, nearest-exact, linear, bilinear, trilinear and bicubic,
// forward here, backward in upsample_backward_ops.cc (registered in
// aten/compiled/nn/spatial/registration.cc).
//
// Shapes, arguments and their errors come from ATen's structured meta
// functions; dtypes are the CPU's (floating types; nearest also uint8, whose
// indices the CPU computes with a float scale). uint8 bilinear and bicubic
// use a fixed-point algorithm of their own on the CPU (int16 weights), which
// these float kernels would not reproduce bit for bit: they stay with the CPU,
// as does half-type bicubic (see bicubic_stays_on_cpu).
// The tables hold the CPU's indices and weights (upsample_tables.h); the
// backward adds in float32 for the half types and rounds once, as the CPU's
// backward kernels do.
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_upsample_nearest_exact1d_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_meta.h>
#include <ATen/ops/upsample_bicubic2d_meta.h>
#include <ATen/ops/upsample_bicubic2d_ops.h>
#include <ATen/ops/upsample_bilinear2d_meta.h>
#include <ATen/ops/upsample_bilinear2d_ops.h>
#include <ATen/ops/upsample_linear1d_meta.h>
#include <ATen/ops/upsample_nearest1d_meta.h>
#include <ATen/ops/upsample_nearest2d_meta.h>
#include <ATen/ops/upsample_nearest3d_meta.h>
#include <ATen/ops/upsample_trilinear3d_meta.h>

#include "kiln/aten/compiled/nn/spatial/upsample_ops.h"
#include "kiln/aten/compiled/launch/structured_run.h"
#include "kiln/aten/compiled/nn/spatial/upsample_tables.h"
#include "kiln/aten/cpu_fallback.h"

namespace kiln::torch_integration::compiled {
namespace {

using Scales = std::initializer_list<std::optional<double>>;

// Forward: checks `input`'s dtype as the CPU dispatches (`dispatch_name` is
// the name its error carries), then gathers into `output`.
void upsample_forward(const char* op_name, const char* dispatch_name, Interpolation mode,
                      const at::Tensor& input, at::IntArrayRef output_size, bool align_corners,
                      Scales scales, const at::Tensor& output) {
  const at::ScalarType type = input.scalar_type();
  const bool nearest = mode == Interpolation::kNearest || mode == Interpolation::kNearestExact;
  TORCH_CHECK_NOT_IMPLEMENTED(is_half_or_float(type) || (nearest && type == at::kByte), "\"",
                              dispatch_name, "\" not implemented for '", c10::toString(type), "'");
  // The CPU's 4-D bilinear kernel keeps float weights; its other kernels
  // store them in the tensor's dtype.
  const at::ScalarType weights =
      mode == Interpolation::kLinear && input.dim() == 4 ? wide_weights(type) : type;
  spatial_gather(op_name, input, output,
                 upsample_axes(mode, input.sizes(), output_size, align_corners, scales, type, weights),
                 weights);
}


// Half-type bicubic: sixteen weighted terms whose float32 rounding differs
// from the CPU's kernel by more than the half types' tolerance where terms
// cancel; it stays with the CPU until the kernel reproduces that order.
bool bicubic_stays_on_cpu(const at::Tensor& input) {
  return input.scalar_type() == at::kHalf || input.scalar_type() == at::kBFloat16;
}

}  // namespace

// Each op: its functional form and out= form, forward then backward.
at::Tensor upsample_nearest1d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales) {
  return structured<at::meta::structured_upsample_nearest1d>(
      nullptr, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_nearest1d", "compute_indices_weights_nearest", Interpolation::kNearest, self, output_size,
                         false, {scales}, output);
      },
      self, output_size, scales);
}

at::Tensor& upsample_nearest1d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales, at::Tensor& out) {
  structured<at::meta::structured_upsample_nearest1d>(
      &out, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_nearest1d", "compute_indices_weights_nearest", Interpolation::kNearest, self, output_size,
                         false, {scales}, output);
      },
      self, output_size, scales);
  return out;
}

at::Tensor upsample_nearest2d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured_upsample_nearest2d>(
      nullptr, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_nearest2d", "upsample_nearest2d_channels_last", Interpolation::kNearest, self, output_size,
                         false, {scales_h, scales_w}, output);
      },
      self, output_size, scales_h, scales_w);
}

at::Tensor& upsample_nearest2d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out) {
  structured<at::meta::structured_upsample_nearest2d>(
      &out, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_nearest2d", "upsample_nearest2d_channels_last", Interpolation::kNearest, self, output_size,
                         false, {scales_h, scales_w}, output);
      },
      self, output_size, scales_h, scales_w);
  return out;
}

at::Tensor upsample_nearest3d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured_upsample_nearest3d>(
      nullptr, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_nearest3d", "compute_indices_weights_nearest", Interpolation::kNearest, self, output_size,
                         false, {scales_d, scales_h, scales_w}, output);
      },
      self, output_size, scales_d, scales_h, scales_w);
}

at::Tensor& upsample_nearest3d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out) {
  structured<at::meta::structured_upsample_nearest3d>(
      &out, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_nearest3d", "compute_indices_weights_nearest", Interpolation::kNearest, self, output_size,
                         false, {scales_d, scales_h, scales_w}, output);
      },
      self, output_size, scales_d, scales_h, scales_w);
  return out;
}

at::Tensor _upsample_nearest_exact1d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales) {
  return structured<at::meta::structured__upsample_nearest_exact1d>(
      nullptr, [&](const at::Tensor& output) {
        upsample_forward("aten::_upsample_nearest_exact1d", "compute_indices_weights_nearest", Interpolation::kNearestExact, self, output_size,
                         false, {scales}, output);
      },
      self, output_size, scales);
}

at::Tensor& _upsample_nearest_exact1d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales, at::Tensor& out) {
  structured<at::meta::structured__upsample_nearest_exact1d>(
      &out, [&](const at::Tensor& output) {
        upsample_forward("aten::_upsample_nearest_exact1d", "compute_indices_weights_nearest", Interpolation::kNearestExact, self, output_size,
                         false, {scales}, output);
      },
      self, output_size, scales);
  return out;
}

at::Tensor _upsample_nearest_exact2d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured__upsample_nearest_exact2d>(
      nullptr, [&](const at::Tensor& output) {
        upsample_forward("aten::_upsample_nearest_exact2d", "_upsample_nearest_exact2d_channels_last", Interpolation::kNearestExact, self, output_size,
                         false, {scales_h, scales_w}, output);
      },
      self, output_size, scales_h, scales_w);
}

at::Tensor& _upsample_nearest_exact2d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out) {
  structured<at::meta::structured__upsample_nearest_exact2d>(
      &out, [&](const at::Tensor& output) {
        upsample_forward("aten::_upsample_nearest_exact2d", "_upsample_nearest_exact2d_channels_last", Interpolation::kNearestExact, self, output_size,
                         false, {scales_h, scales_w}, output);
      },
      self, output_size, scales_h, scales_w);
  return out;
}

at::Tensor _upsample_nearest_exact3d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured__upsample_nearest_exact3d>(
      nullptr, [&](const at::Tensor& output) {
        upsample_forward("aten::_upsample_nearest_exact3d", "compute_indices_weights_nearest", Interpolation::kNearestExact, self, output_size,
                         false, {scales_d, scales_h, scales_w}, output);
      },
      self, output_size, scales_d, scales_h, scales_w);
}

at::Tensor& _upsample_nearest_exact3d_out(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out) {
  structured<at::meta::structured__upsample_nearest_exact3d>(
      &out, [&](const at::Tensor& output) {
        upsample_forward("aten::_upsample_nearest_exact3d", "compute_indices_weights_nearest", Interpolation::kNearestExact, self, output_size,
                         false, {scales_d, scales_h, scales_w}, output);
      },
      self, output_size, scales_d, scales_h, scales_w);
  return out;
}

at::Tensor upsample_linear1d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales) {
  return structured<at::meta::structured_upsample_linear1d>(
      nullptr, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_linear1d", "compute_indices_weights_linear", Interpolation::kLinear, self, output_size,
                         align_corners, {scales}, output);
      },
      self, output_size, align_corners, scales);
}

at::Tensor& upsample_linear1d_out(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales, at::Tensor& out) {
  structured<at::meta::structured_upsample_linear1d>(
      &out, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_linear1d", "compute_indices_weights_linear", Interpolation::kLinear, self, output_size,
                         align_corners, {scales}, output);
      },
      self, output_size, align_corners, scales);
  return out;
}

at::Tensor upsample_bilinear2d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w) {
  if (self.scalar_type() == at::kByte) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::upsample_bilinear2d>::call(self, output_size, align_corners, scales_h, scales_w);
  }
  return structured<at::meta::structured_upsample_bilinear2d>(
      nullptr, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_bilinear2d", "upsample_bilinear2d_channels_last", Interpolation::kLinear, self, output_size,
                         align_corners, {scales_h, scales_w}, output);
      },
      self, output_size, align_corners, scales_h, scales_w);
}

at::Tensor& upsample_bilinear2d_out(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out) {
  if (self.scalar_type() == at::kByte) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::upsample_bilinear2d_out>::call(self, output_size, align_corners, scales_h, scales_w, out);
    return out;
  }
  structured<at::meta::structured_upsample_bilinear2d>(
      &out, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_bilinear2d", "upsample_bilinear2d_channels_last", Interpolation::kLinear, self, output_size,
                         align_corners, {scales_h, scales_w}, output);
      },
      self, output_size, align_corners, scales_h, scales_w);
  return out;
}

at::Tensor upsample_trilinear3d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w) {
  return structured<at::meta::structured_upsample_trilinear3d>(
      nullptr, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_trilinear3d", "compute_indices_weights_linear", Interpolation::kLinear, self, output_size,
                         align_corners, {scales_d, scales_h, scales_w}, output);
      },
      self, output_size, align_corners, scales_d, scales_h, scales_w);
}

at::Tensor& upsample_trilinear3d_out(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out) {
  structured<at::meta::structured_upsample_trilinear3d>(
      &out, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_trilinear3d", "compute_indices_weights_linear", Interpolation::kLinear, self, output_size,
                         align_corners, {scales_d, scales_h, scales_w}, output);
      },
      self, output_size, align_corners, scales_d, scales_h, scales_w);
  return out;
}

at::Tensor upsample_bicubic2d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w) {
  if (self.scalar_type() == at::kByte || bicubic_stays_on_cpu(self)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::upsample_bicubic2d>::call(self, output_size, align_corners, scales_h, scales_w);
  }
  return structured<at::meta::structured_upsample_bicubic2d>(
      nullptr, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_bicubic2d", "compute_indices_weights_cubic", Interpolation::kCubic, self, output_size,
                         align_corners, {scales_h, scales_w}, output);
      },
      self, output_size, align_corners, scales_h, scales_w);
}

at::Tensor& upsample_bicubic2d_out(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor& out) {
  if (self.scalar_type() == at::kByte || bicubic_stays_on_cpu(self)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::upsample_bicubic2d_out>::call(self, output_size, align_corners, scales_h, scales_w, out);
    return out;
  }
  structured<at::meta::structured_upsample_bicubic2d>(
      &out, [&](const at::Tensor& output) {
        upsample_forward("aten::upsample_bicubic2d", "compute_indices_weights_cubic", Interpolation::kCubic, self, output_size,
                         align_corners, {scales_h, scales_w}, output);
      },
      self, output_size, align_corners, scales_h, scales_w);
  return out;
}

}  // namespace kiln::torch_integration::compiled
