// The per-dim index and weight tables of ATen's upsampling kernels, computed
// with the CPU's arithmetic (its opmath type: float for float32 and the half
// types, double for float64; a float scale for uint8), for spatial_gather.h.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

#include "kiln/aten/compiled/nn/spatial/spatial_gather.h"

namespace kiln::torch_integration::compiled {

// The floating dtypes the CPU's upsampling kernels take.
inline bool is_half_or_float(at::ScalarType type) {
  return type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16;
}

// The opmath type: float32 weights for the half types.
inline at::ScalarType wide_weights(at::ScalarType type) {
  return type == at::kDouble ? at::kDouble : at::kFloat;
}

enum class Interpolation { kNearest, kNearestExact, kLinear, kCubic };

// One SpatialAxis per spatial dim: the last output_size.size() dims of a
// tensor of `input_sizes`, resized to `output_size` (scales[k] is the
// caller's scale factor of spatial dim k, if any). `weight_dtype` is the
// dtype the CPU keeps its weights in: the tensor's own for its generic
// forward kernel, which also takes lambda0 = 1 - (lambda1 rounded to it);
// float32 (float64 for float64) for its backward kernels and its 4-D
// bilinear forward.
std::vector<SpatialAxis> upsample_axes(Interpolation mode, at::IntArrayRef input_sizes,
                                       at::IntArrayRef output_size, bool align_corners,
                                       c10::ArrayRef<std::optional<double>> scales,
                                       at::ScalarType dtype, at::ScalarType weight_dtype);

}  // namespace kiln::torch_integration::compiled
