// Compiled histc: counts of the elements in `bins` equal-width bins between
// min and max (or the data's own min and max when min == max), as one
// sequential row kernel over the flattened input. Bin positions follow the
// CPU's linear interpolation, (x - min) * bins / (max - min) truncated, in the
// input dtype (the half types round after every step, as c10::Half does);
// x == max lands in the last bin; values outside [min, max] and NaN are not
// counted. Counts are exact and rounded once to the output dtype; the CPU
// accumulates in the output dtype itself, over per-thread partial
// histograms, so a half-precision bin holding more than 256 (bfloat16) or
// 2048 (float16) elements saturates there and differs from kiln's count.
// Choosing the range from the data reads its min and max back to
// the host (a stream sync), since a non-finite range must raise first.
// Integer inputs are taken as CUDA takes them (the CPU refuses them): the
// range converted to the input's type, data-chosen ranges widened by one on
// each side when flat, integer bin arithmetic, counts in the input's dtype.
//
// bincount: counts (or sums of weights, float32 for float32 weights, else
// float64) per non-negative integer, as CUDA and the CPU compute them; the
// number of bins reads the data's maximum back to the host (a stream sync).
// Registered in aten/compiled/sort/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace kiln::torch_integration::compiled {

at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max);
at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max,
                      at::Tensor& out);
at::Tensor bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights, c10::SymInt minlength);

}  // namespace kiln::torch_integration::compiled
