#include "kiln/aten/compiled/nn/spatial/upsample_tables.h"

#include <algorithm>
#include <cmath>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

namespace kiln::torch_integration::compiled {
namespace {

// Bicubic convolution constant of ATen's non-antialiased bicubic (OpenCV's).
constexpr double kCubicA = -0.75;

// 1 / scale when the caller gave a positive scale factor, else in / out.
template <typename T>
T scales_value(std::optional<double> scale, int64_t input_size, int64_t output_size) {
  return scale.has_value() && *scale > 0. ? static_cast<T>(1.0 / *scale)
                                          : static_cast<T>(input_size) / output_size;
}

// Source units per destination unit.
template <typename T>
T area_scale(int64_t input_size, int64_t output_size, bool align_corners,
             std::optional<double> scale) {
  if (align_corners) {
    return output_size > 1 ? static_cast<T>(input_size - 1) / (output_size - 1) : static_cast<T>(0);
  }
  return scales_value<T>(scale, input_size, output_size);
}

// The real source coordinate of destination index `index`: pixel corners
// aligned, or pixel centres (clamped at 0 except for cubic, which reads past
// the edge and clamps the taps instead).
template <typename T>
T source_index(T scale, int64_t index, bool align_corners, bool cubic) {
  if (align_corners) return scale * index;
  T source = scale * (index + static_cast<T>(0.5)) - static_cast<T>(0.5);
  return (!cubic && source < 0) ? static_cast<T>(0) : source;
}

// floor of the source coordinate (through float, as the CPU's floorf does),
// at most input_size - 1, and the clamped fraction past it.
template <typename T>
void guard_index_and_lambda(T real_index, int64_t input_size, int64_t& index, T& lambda) {
  index = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real_index))), input_size - 1);
  lambda = std::min(std::max(real_index - index, static_cast<T>(0)), static_cast<T>(1));
}

template <typename T>
T cubic_inner(T x) {  // |x| <= 1
  return ((static_cast<T>(kCubicA) + 2) * x - (static_cast<T>(kCubicA) + 3)) * x * x + 1;
}

template <typename T>
T cubic_outer(T x) {  // 1 < |x| < 2
  const T a = static_cast<T>(kCubicA);
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

// `value` rounded to `dtype`, the type the CPU stores its weights in.
double rounded_to(at::ScalarType dtype, double value) {
  switch (dtype) {
    case at::kHalf: return static_cast<float>(static_cast<c10::Half>(static_cast<float>(value)));
    case at::kBFloat16:
      return static_cast<float>(static_cast<c10::BFloat16>(static_cast<float>(value)));
    default: return value;
  }
}

template <typename T>
SpatialAxis build_axis(Interpolation mode, int64_t dim, int64_t input_size, int64_t output_size,
                       bool align_corners, std::optional<double> scale, at::ScalarType dtype) {
  SpatialAxis axis;
  axis.dim = dim;
  const T ratio = area_scale<T>(input_size, output_size, align_corners, scale);
  switch (mode) {
    case Interpolation::kNearest:
      for (int64_t o = 0; o < output_size; ++o) {
        T real = source_index<T>(ratio, o, /*align_corners=*/true, false);
        int64_t index = static_cast<int64_t>(std::floor(static_cast<float>(real)));
        axis.indices.push_back(std::min(index, input_size - 1));
      }
      break;
    case Interpolation::kNearestExact:
      for (int64_t o = 0; o < output_size; ++o) {
        T real = source_index<T>(ratio, o, /*align_corners=*/false, false);
        int64_t index = static_cast<int64_t>(std::floor(static_cast<float>(real + 0.5)));
        axis.indices.push_back(std::min(index, input_size - 1));
      }
      break;
    case Interpolation::kLinear:
      axis.taps = 2;
      for (int64_t o = 0; o < output_size; ++o) {
        // Equal sizes copy (both taps at o, so a neighbour's inf or NaN never
        // meets a zero weight).
        int64_t first = o, second = o;
        T lambda = 0;
        if (output_size != input_size) {
          guard_index_and_lambda<T>(source_index<T>(ratio, o, align_corners, false), input_size,
                                    first, lambda);
          second = first + (first < input_size - 1 ? 1 : 0);
        }
        axis.indices.push_back(first);
        axis.indices.push_back(second);
        // The CPU stores lambda1 in the tensor's dtype first and takes
        // lambda0 = 1 - (the stored lambda1).
        const double stored = rounded_to(dtype, lambda);
        axis.weights.push_back(static_cast<T>(1) - static_cast<T>(stored));
        axis.weights.push_back(stored);
      }
      break;
    case Interpolation::kCubic:
      axis.taps = 4;
      for (int64_t o = 0; o < output_size; ++o) {
        int64_t first = 0;
        T t = 0;
        guard_index_and_lambda<T>(source_index<T>(ratio, o, align_corners, true), input_size,
                                  first, t);
        const T mirrored = static_cast<T>(1.0 - t);
        const T coefficients[4] = {cubic_outer<T>(static_cast<T>(t + 1.0)), cubic_inner<T>(t),
                                   cubic_inner<T>(mirrored),
                                   cubic_outer<T>(static_cast<T>(mirrored + 1.0))};
        for (int64_t tap = 0; tap < 4; ++tap) {
          axis.indices.push_back(std::clamp<int64_t>(first + tap - 1, 0, input_size - 1));
          axis.weights.push_back(coefficients[tap]);
        }
      }
      break;
  }
  return axis;
}

}  // namespace

std::vector<SpatialAxis> upsample_axes(Interpolation mode, at::IntArrayRef input_sizes,
                                       at::IntArrayRef output_size, bool align_corners,
                                       c10::ArrayRef<std::optional<double>> scales,
                                       at::ScalarType dtype, at::ScalarType weight_dtype) {
  const int64_t spatial = static_cast<int64_t>(output_size.size());
  const int64_t first_dim = static_cast<int64_t>(input_sizes.size()) - spatial;
  std::vector<SpatialAxis> axes;
  for (int64_t k = 0; k < spatial; ++k) {
    std::optional<double> scale = k < static_cast<int64_t>(scales.size()) ? scales[k] : std::nullopt;
    const int64_t dim = first_dim + k;
    axes.push_back(dtype == at::kDouble
                       ? build_axis<double>(mode, dim, input_sizes[dim], output_size[k], align_corners, scale, weight_dtype)
                       : build_axis<float>(mode, dim, input_sizes[dim], output_size[k], align_corners, scale, weight_dtype));
  }
  return axes;
}

}  // namespace kiln::torch_integration::compiled
