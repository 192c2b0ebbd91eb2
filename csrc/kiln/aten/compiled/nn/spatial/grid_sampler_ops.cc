// grid_sampler_2d forward, built from kiln's compiled elementwise ops and
// gather: the grid is turned into source coordinates (unnormalized, then
// clipped or reflected by the padding mode), each tap's pixel is gathered from
// the flattened input planes and the taps are weighted as the CPU weights them.
//
// Semantics are the CPU's (read from its GridSampler.h, written anew):
//  - unnormalize: align_corners: (x + 1) / 2 * (size - 1); else
//    ((x + 1) * size - 1) / 2.
//  - padding: zeros keeps the coordinate (taps outside read 0); border clips it
//    to [0, size - 1]; reflection reflects it about the edges (pixel centres
//    with align_corners, else the borders half a pixel out) and then clips.
//  - bilinear: the four neighbours of floor(x), floor(y), weighted by area;
//    nearest: the pixel at round-half-even (nearbyint); bicubic: 4x4 taps around
//    floor, cubic convolution with A = -0.75, the padding applied to each tap's
//    coordinate (the centre is unnormalized only), rows first then columns.
// Arithmetic is in the input's dtype, every step rounded, half types too: the
// CPU's kernel does the same steps in the same order, so even half and
// bfloat16 results (where a rounded coordinate can pick another pixel) match
// it bit for bit. Errors are the CPU's, raised before any launch.
#include "kiln/aten/compiled/nn/spatial/grid_sampler_ops.h"

#include <ATen/ATen.h>

#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

enum Mode : int64_t { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum Padding : int64_t { kZeros = 0, kBorder = 1, kReflection = 2 };

at::Tensor unnormalize(const at::Tensor& coordinate, int64_t size, bool align_corners) {
  if (align_corners) return coordinate.add(1).div(2).mul(static_cast<double>(size - 1));
  return coordinate.add(1).mul(static_cast<double>(size)).sub(1).div(2);
}

at::Tensor clip(const at::Tensor& coordinate, int64_t size) {
  return coordinate.clamp(0, static_cast<double>(size - 1));
}

// Reflects into [twice_low / 2, twice_high / 2].
at::Tensor reflect(const at::Tensor& coordinate, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return at::zeros_like(coordinate);
  const double minimum = twice_low / 2.0;
  const double span = (twice_high - twice_low) / 2.0;
  at::Tensor distance = coordinate.sub(minimum).abs();
  at::Tensor extra = distance.fmod(span);
  at::Tensor flips = distance.div(span).floor();
  at::Tensor even = flips.fmod(2).eq(0);
  return at::where(even, extra.add(minimum), extra.neg().add(span + minimum));
}

at::Tensor apply_padding(const at::Tensor& coordinate, int64_t size, int64_t padding, bool align_corners) {
  if (padding == kBorder) return clip(coordinate, size);
  if (padding == kReflection) {
    at::Tensor reflected = align_corners ? reflect(coordinate, 0, 2 * (size - 1))
                                         : reflect(coordinate, -1, 2 * size - 1);
    return clip(reflected, size);
  }
  return coordinate;
}

struct Planes {
  at::Tensor flat;  // (N, C, H * W)
  int64_t channels, height, width;
};

// The pixels at integer-valued coordinates x, y (N, Ho, Wo), 0 outside the
// image (and for NaN coordinates): (N, C, Ho, Wo).
at::Tensor tap(const Planes& planes, const at::Tensor& x, const at::Tensor& y) {
  at::Tensor inside = x.ge(0).logical_and(x.le(static_cast<double>(planes.width - 1)))
                          .logical_and(y.ge(0)).logical_and(y.le(static_cast<double>(planes.height - 1)));
  at::Tensor linear = y.mul(static_cast<double>(planes.width)).add(x);
  linear = at::where(inside, linear, at::zeros({}, linear.options())).to(at::kLong);
  const int64_t batch = x.size(0), out_h = x.size(1), out_w = x.size(2);
  at::Tensor index = linear.reshape({batch, 1, out_h * out_w}).expand({batch, planes.channels, out_h * out_w});
  at::Tensor values = planes.flat.gather(2, index).view({batch, planes.channels, out_h, out_w});
  return values.mul(inside.unsqueeze(1).to(values.scalar_type()));
}

at::Tensor cubic_near(const at::Tensor& t) {  // |t| <= 1
  constexpr double A = -0.75;
  return t.mul(A + 2).sub(A + 3).mul(t).mul(t).add(1);
}

at::Tensor cubic_far(const at::Tensor& t) {  // 1 < |t| < 2
  constexpr double A = -0.75;
  return t.mul(A).sub(5 * A).mul(t).add(8 * A).mul(t).sub(4 * A);
}


}  // namespace

void check_grid_sampler_2d_arguments(const at::Tensor& input, const at::Tensor& grid, int64_t mode, int64_t padding) {
  TORCH_CHECK(input.scalar_type() == grid.scalar_type(), "expected scalar type ", input.scalar_type(),
              " but found ", grid.scalar_type());
  TORCH_CHECK(grid.dim() >= 1 && grid.size(-1) == input.dim() - 2, "grid_sampler(): expected grid to have size ",
              input.dim() - 2, " in last dimension, but got grid with sizes ", grid.sizes());
  TORCH_CHECK(input.size(0) == grid.size(0), "grid_sampler(): expected grid and input to have same batch "
              "size, but got input with sizes ", input.sizes(), " and grid with sizes ", grid.sizes());
  for (int64_t dim = 2; dim < input.dim(); ++dim) {
    TORCH_CHECK(input.size(dim) > 0, "grid_sampler(): expected input to have non-empty spatial dimensions, "
                "but input has sizes ", input.sizes(), " with dimension ", dim, " being empty");
  }
  TORCH_CHECK(input.dim() == 4 && input.dim() == grid.dim(), "grid_sampler(): expected 4D input and grid "
              "with same number of dimensions, but got input with sizes ", input.sizes(),
              " and grid with sizes ", grid.sizes());
  // The CPU reads an unknown mode as none of its cases (no error, no defined
  // result); kiln refuses it.
  TORCH_CHECK(mode >= kBilinear && mode <= kBicubic, "grid_sampler(): unknown interpolation mode ", mode);
  TORCH_CHECK(padding >= kZeros && padding <= kReflection, "grid_sampler(): unknown padding mode ", padding);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(input.scalar_type()),
                              "\"grid_sampler_2d_cpu_kernel_impl\" not implemented for '",
                              c10::toString(input.scalar_type()), "'");
}

at::Tensor grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation_mode,
                           int64_t padding_mode, bool align_corners) {
  record_op("aten::grid_sampler_2d", OpPath::kCompiled);
  check_grid_sampler_2d_arguments(input, grid, interpolation_mode, padding_mode);
  const at::ScalarType type = input.scalar_type();
  const int64_t batch = input.size(0), channels = input.size(1);
  const int64_t height = input.size(2), width = input.size(3);
  const int64_t out_h = grid.size(1), out_w = grid.size(2);
  if (batch == 0 || channels == 0 || out_h == 0 || out_w == 0) {
    return at::zeros({batch, channels, out_h, out_w}, input.options());
  }
  Planes planes{input.reshape({batch, channels, height * width}), channels, height, width};
  at::Tensor grid_values = grid;
  at::Tensor x = unnormalize(grid_values.select(3, 0), width, align_corners);
  at::Tensor y = unnormalize(grid_values.select(3, 1), height, align_corners);
  at::Tensor result;
  if (interpolation_mode == kBicubic) {
    at::Tensor x0 = x.floor(), y0 = y.floor();
    at::Tensor tx = x.sub(x0), ty = y.sub(y0);
    at::Tensor wx[4] = {cubic_far(tx.add(1)), cubic_near(tx), cubic_near(tx.neg().add(1)),
                        cubic_far(tx.neg().add(2))};
    at::Tensor wy[4] = {cubic_far(ty.add(1)), cubic_near(ty), cubic_near(ty.neg().add(1)),
                        cubic_far(ty.neg().add(2))};
    for (int j = 0; j < 4; ++j) {
      at::Tensor row_y = apply_padding(y0.add(j - 1), height, padding_mode, align_corners);
      at::Tensor row;
      for (int i = 0; i < 4; ++i) {
        at::Tensor column_x = apply_padding(x0.add(i - 1), width, padding_mode, align_corners);
        at::Tensor term = tap(planes, column_x, row_y).mul(wx[i].unsqueeze(1));
        row = i == 0 ? term : row.add(term);
      }
      at::Tensor term = row.mul(wy[j].unsqueeze(1));
      result = j == 0 ? term : result.add(term);
    }
  } else {
    x = apply_padding(x, width, padding_mode, align_corners);
    y = apply_padding(y, height, padding_mode, align_corners);
    if (interpolation_mode == kNearest) {
      result = tap(planes, x.round(), y.round());
    } else {
      at::Tensor west = x.floor(), north = y.floor();
      at::Tensor east = west.add(1), south = north.add(1);
      at::Tensor nw = east.sub(x).mul(south.sub(y)).unsqueeze(1);
      at::Tensor ne = x.sub(west).mul(south.sub(y)).unsqueeze(1);
      at::Tensor sw = east.sub(x).mul(y.sub(north)).unsqueeze(1);
      at::Tensor se = x.sub(west).mul(y.sub(north)).unsqueeze(1);
      result = tap(planes, west, north).mul(nw).add(tap(planes, east, north).mul(ne))
                   .add(tap(planes, west, south).mul(sw)).add(tap(planes, east, south).mul(se));
    }
  }
  return result.to(type).contiguous(input.suggest_memory_format());
}

}  // namespace kiln::torch_integration::compiled
