// No header of its own: defines the backward declared in grid_sampler_ops.h.
// grid_sampler_2d_backward, built like the forward (grid_sampler_ops.cc) from
// compiled elementwise ops, gather and scatter_add: each tap's weight times
// grad_output is added to its pixel of grad_input, and grad_grid is the
// derivative of the taps' weights, summed over channels, times the
// coordinate's derivative (the unnormalize scale; border and reflection
// padding multiply by 0 or +-1 as the CPU's clip/reflect "set_grad" helpers,
// 0 at and beyond the clip limits). Nearest gives a zero grad_grid; bicubic
// applies the padding per tap, so only the scale multiplies its grid gradient.
// In the input's dtype, as the forward (half types agree with the CPU to
// about one unit in the last place: the sums run in another order).
#include <ATen/ATen.h>

#include <array>
#include <tuple>

#include "kiln/aten/compiled/nn/spatial/grid_sampler_ops.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

struct Coordinate {
  at::Tensor value;
  at::Tensor multiplier;  // d value / d unnormalized coordinate
};

Coordinate clip_with_grad(const at::Tensor& value, int64_t size) {
  const double limit = static_cast<double>(size - 1);
  at::Tensor inside = value.gt(0).logical_and(value.lt(limit));
  return {value.clamp(0, limit), inside.to(value.scalar_type())};
}

Coordinate reflect_with_grad(const at::Tensor& value, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return {at::zeros_like(value), at::zeros_like(value)};
  const double minimum = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
  at::Tensor shifted = value.sub(minimum);
  at::Tensor sign = at::where(shifted.lt(0), at::full({}, -1.0, value.options()), at::full({}, 1.0, value.options()));
  at::Tensor distance = shifted.abs();
  at::Tensor extra = distance.fmod(span);
  at::Tensor even = distance.div(span).floor().fmod(2).eq(0);
  return {at::where(even, extra.add(minimum), extra.neg().add(span + minimum)), at::where(even, sign, sign.neg())};
}

Coordinate padded_with_grad(const at::Tensor& value, int64_t size, int64_t padding, bool align_corners) {
  if (padding == 1) return clip_with_grad(value, size);
  if (padding == 2) {
    Coordinate reflected = align_corners ? reflect_with_grad(value, 0, 2 * (size - 1))
                                         : reflect_with_grad(value, -1, 2 * size - 1);
    Coordinate clipped = clip_with_grad(reflected.value, size);
    return {clipped.value, clipped.multiplier.mul(reflected.multiplier)};
  }
  return {value, at::ones_like(value)};
}

struct Image {
  at::Tensor flat;        // input (N, C, H * W), compute dtype
  at::Tensor grad_flat;   // grad_input (N, C, H * W), or undefined
  int64_t channels, height, width;
};

// The pixels at integer-valued x, y (N, Ho, Wo), 0 outside; when grad_flat is
// defined, adds `contribution` (N, C, Ho, Wo) to those inside.
at::Tensor tap(Image& image, const at::Tensor& x, const at::Tensor& y, const at::Tensor& contribution) {
  at::Tensor inside = x.ge(0).logical_and(x.le(static_cast<double>(image.width - 1)))
                          .logical_and(y.ge(0)).logical_and(y.le(static_cast<double>(image.height - 1)));
  at::Tensor linear = y.mul(static_cast<double>(image.width)).add(x);
  linear = at::where(inside, linear, at::zeros({}, linear.options())).to(at::kLong);
  const int64_t batch = x.size(0), out_h = x.size(1), out_w = x.size(2);
  at::Tensor index = linear.reshape({batch, 1, out_h * out_w}).expand({batch, image.channels, out_h * out_w});
  at::Tensor mask = inside.unsqueeze(1).to(image.flat.scalar_type());
  if (image.grad_flat.defined()) {
    at::Tensor source = contribution.mul(mask).reshape({batch, image.channels, out_h * out_w});
    at::scatter_add_out(image.grad_flat, image.grad_flat, 2, index, source);
  }
  return image.flat.gather(2, index).view({batch, image.channels, out_h, out_w}).mul(mask);
}

std::array<at::Tensor, 4> cubic_weights(const at::Tensor& t) {
  constexpr double A = -0.75;
  auto near = [](const at::Tensor& x) { return x.mul(A + 2).sub(A + 3).mul(x).mul(x).add(1); };
  auto far = [](const at::Tensor& x) { return x.mul(A).sub(5 * A).mul(x).add(8 * A).mul(x).sub(4 * A); };
  return {far(t.add(1)), near(t), near(t.neg().add(1)), far(t.neg().add(2))};
}

// d weight / d t of cubic_weights.
std::array<at::Tensor, 4> cubic_weight_grads(const at::Tensor& t) {
  constexpr double A = -0.75;
  auto near = [](const at::Tensor& x) { return x.mul(3 * (A + 2)).sub(2 * (A + 3)).mul(x); };
  auto far = [](const at::Tensor& x) { return x.mul(3 * A).sub(10 * A).mul(x).add(8 * A); };
  return {far(t.add(1)), near(t), near(t.neg().add(1)).neg(), far(t.neg().add(2)).neg()};
}

double unnormalize_scale(int64_t size, bool align_corners) {
  return align_corners ? (size - 1) / 2.0 : size / 2.0;
}

at::Tensor unnormalize(const at::Tensor& coordinate, int64_t size, bool align_corners) {
  if (align_corners) return coordinate.add(1).div(2).mul(static_cast<double>(size - 1));
  return coordinate.add(1).mul(static_cast<double>(size)).sub(1).div(2);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> grid_sampler_2d_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& grid,
    int64_t interpolation_mode, int64_t padding_mode, bool align_corners, std::array<bool, 2> output_mask) {
  record_op("aten::grid_sampler_2d_backward", OpPath::kCompiled);
  check_grid_sampler_2d_arguments(input, grid, interpolation_mode, padding_mode);
  const at::ScalarType type = input.scalar_type();
  const at::ScalarType compute = type;  // see above
  const int64_t batch = input.size(0), channels = input.size(1);
  const int64_t height = input.size(2), width = input.size(3);
  const int64_t out_h = grid.size(1), out_w = grid.size(2);
  const bool want_input = output_mask[0];
  if (batch == 0 || channels == 0 || out_h == 0 || out_w == 0) {
    return {want_input ? at::zeros_like(input, at::MemoryFormat::Contiguous) : at::Tensor(), at::zeros_like(grid)};
  }
  Image image{input.to(compute).reshape({batch, channels, height * width}),
              want_input ? at::zeros({batch, channels, height * width}, input.options().dtype(compute)) : at::Tensor(),
              channels, height, width};
  at::Tensor gout = grad_output.to(compute);
  at::Tensor grid_values = grid.to(compute);
  at::Tensor x = unnormalize(grid_values.select(3, 0), width, align_corners);
  at::Tensor y = unnormalize(grid_values.select(3, 1), height, align_corners);
  const double scale_x = unnormalize_scale(width, align_corners), scale_y = unnormalize_scale(height, align_corners);
  at::Tensor grad_x = at::zeros_like(x), grad_y = at::zeros_like(y);
  if (interpolation_mode == 2) {
    at::Tensor x0 = x.floor(), y0 = y.floor();
    at::Tensor tx = x.sub(x0), ty = y.sub(y0);
    auto wx = cubic_weights(tx), wy = cubic_weights(ty);
    auto dx = cubic_weight_grads(tx), dy = cubic_weight_grads(ty);
    for (int j = 0; j < 4; ++j) {
      at::Tensor row_y = padded_with_grad(y0.add(j - 1), height, padding_mode, align_corners).value;
      for (int i = 0; i < 4; ++i) {
        at::Tensor column_x = padded_with_grad(x0.add(i - 1), width, padding_mode, align_corners).value;
        at::Tensor weight = wx[i].mul(wy[j]).unsqueeze(1);
        at::Tensor value = tap(image, column_x, row_y, gout.mul(weight)).mul(gout);
        grad_x = grad_x.add(value.mul(dx[i].mul(wy[j]).unsqueeze(1)).sum(1));
        grad_y = grad_y.add(value.mul(dy[j].mul(wx[i]).unsqueeze(1)).sum(1));
      }
    }
    grad_x = grad_x.mul(scale_x);
    grad_y = grad_y.mul(scale_y);
  } else {
    Coordinate cx = padded_with_grad(x, width, padding_mode, align_corners);
    Coordinate cy = padded_with_grad(y, height, padding_mode, align_corners);
    if (interpolation_mode == 1) {
      tap(image, cx.value.round(), cy.value.round(), gout);
    } else {
      at::Tensor west = cx.value.floor(), north = cy.value.floor();
      at::Tensor east = west.add(1), south = north.add(1);
      at::Tensor to_east = east.sub(cx.value).unsqueeze(1), from_west = cx.value.sub(west).unsqueeze(1);
      at::Tensor to_south = south.sub(cy.value).unsqueeze(1), from_north = cy.value.sub(north).unsqueeze(1);
      at::Tensor nw = tap(image, west, north, gout.mul(to_east).mul(to_south)).mul(gout);
      at::Tensor ne = tap(image, east, north, gout.mul(from_west).mul(to_south)).mul(gout);
      at::Tensor sw = tap(image, west, south, gout.mul(to_east).mul(from_north)).mul(gout);
      at::Tensor se = tap(image, east, south, gout.mul(from_west).mul(from_north)).mul(gout);
      grad_x = ne.sub(nw).mul(to_south).add(se.sub(sw).mul(from_north)).sum(1);
      grad_y = sw.sub(nw).mul(to_east).add(se.sub(ne).mul(from_west)).sum(1);
      grad_x = grad_x.mul(cx.multiplier).mul(scale_x);
      grad_y = grad_y.mul(cy.multiplier).mul(scale_y);
    }
  }
  at::Tensor grad_grid = at::stack({grad_x, grad_y}, 3).to(type);
  at::Tensor grad_input;
  if (want_input) grad_input = image.grad_flat.view({batch, channels, height, width}).to(type);
  return {grad_input, grad_grid};
}

}  // namespace kiln::torch_integration::compiled
