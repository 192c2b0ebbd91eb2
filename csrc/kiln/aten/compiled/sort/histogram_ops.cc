// histc as a row kernel (see histogram_ops.h).
#include "kiln/aten/compiled/sort/histogram_ops.h"

#include <ATen/Dispatch.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max.h>
#include <ATen/ops/min.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "kiln/aten/compiled/launch/row_kernel.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

// Operands (data [n], hist [bins]); scalars[0], [1]: the range as doubles.
// ROUND rounds to the input dtype (identity for float32/float64).
const char* kHistc = R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const value_t* data = (const value_t*)rows[0];
  value_t* hist = (value_t*)rows[1];
  const int64_t n = lengths[0], bins = lengths[1];
  /* Exact counts, rounded once when stored (see histogram_ops.h). */
  int64_t* counts = (int64_t*)scratch;
  for (int64_t j = 0; j < bins; ++j) counts[j] = 0;
  const value_compute left = ROUND((value_compute)args->scalars[0].real);
  const value_compute right = ROUND((value_compute)args->scalars[1].real);
  const value_compute width = ROUND(right - left);
  const value_compute scale = ROUND((value_compute)bins);
  for (int64_t i = 0; i < n; ++i) {
    value_compute x = value_load(data[i * steps[0]]);
    if (!(x >= left && x <= right)) continue;
    int64_t position = (int64_t)ROUND(ROUND(ROUND(x - left) * scale) / width);
    if (position == bins) position -= 1;
    counts[position] += 1;
  }
  for (int64_t j = 0; j < bins; ++j) hist[j * steps[1]] = value_store((value_compute)counts[j]);
}
)KILN";

// Integer inputs, as CUDA bins them: the range in the input's integer type,
// the position (x - min) * bins / (max - min) in integer arithmetic (128-bit,
// so the product cannot overflow), counts wrapped to the output dtype.
const char* kIntegerHistc = R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const value_t* data = (const value_t*)rows[0];
  value_t* hist = (value_t*)rows[1];
  const int64_t n = lengths[0], bins = lengths[1];
  int64_t* counts = (int64_t*)scratch;
  for (int64_t j = 0; j < bins; ++j) counts[j] = 0;
  const int64_t left = args->scalars[0].integer, right = args->scalars[1].integer;
  for (int64_t i = 0; i < n; ++i) {
    int64_t x = (int64_t)value_load(data[i * steps[0]]);
    if (!(x >= left && x <= right)) continue;
    int64_t position = (int64_t)((__int128)(x - left) * bins / (right - left));
    if (position == bins) position -= 1;
    counts[position] += 1;
  }
  for (int64_t j = 0; j < bins; ++j) hist[j * steps[1]] = (value_t)counts[j];
}
)KILN";

int64_t bits_of(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

}  // namespace

namespace {

// The range of an integer histc, as CUDA takes it: min and max converted to
// the input's type; equal ones choose the data's extremes (a stream sync),
// widened by one on each side when those are equal too.
std::pair<int64_t, int64_t> integer_range(const at::Tensor& self, const at::Scalar& min, const at::Scalar& max) {
  int64_t low = 0, high = 0;
  AT_DISPATCH_INTEGRAL_TYPES(self.scalar_type(), "histc", [&] {
    low = static_cast<int64_t>(min.to<scalar_t>());
    high = static_cast<int64_t>(max.to<scalar_t>());
  });
  if (low == high && self.numel() > 0) {
    low = at::min(self).item<int64_t>();
    high = at::max(self).item<int64_t>();
  }
  if (low == high) {
    low -= 1;
    high += 1;
  }
  TORCH_CHECK(low < high, "torch.histc: max must be larger than min");
  return {low, high};
}

}  // namespace

at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max,
                      at::Tensor& out) {
  const char* op_name = "aten::histc";
  const c10::ScalarType type = self.scalar_type();
  const bool floating = type == at::kHalf || type == at::kBFloat16 || type == at::kFloat || type == at::kDouble;
  // As CUDA: every integer type too (mixture-of-experts routing counts
  // tokens per expert with histc on int32 indices); the CPU refuses them.
  const bool integral = type == at::kByte || type == at::kChar || type == at::kShort || type == at::kInt ||
                        type == at::kLong;
  TORCH_CHECK_NOT_IMPLEMENTED(floating || integral, "\"histc\" not implemented for '", c10::toString(type), "'");
  TORCH_CHECK(out.scalar_type() == type, "torch.histogram: input tensor and hist tensor should have the same dtype,",
              " but got input ", self.dtype(), " and hist ", out.dtype());
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  if (integral) {
    auto [low, high] = integer_range(self, min, max);
    at::native::resize_output(out, {bins});
    std::string signature = std::string("histc_integer|") + row_dtype_name(type);
    std::string name = std::string("histc_") + row_dtype_name(type);
    std::string element = row_element_type(type, "value", op_name);
    RowLaunch launch{op_name, signature, name, [&]() { return element + kIntegerHistc; }};
    launch.dim = 0;
    launch.scalars[0] = low;
    launch.scalars[1] = high;
    launch.scratch_bytes = static_cast<int64_t>(sizeof(int64_t)) * bins;
    launch_rows(launch, {self.reshape({-1}), out});
    return out;
  }
  double low = min.to<double>(), high = max.to<double>();
  TORCH_CHECK(low <= high, "torch.histc: max must be larger than min");
  if (low == high) {
    if (self.numel() == 0) {
      low = 0.0;
      high = 1.0;
    } else {
      // Reads the data's extremes back to the host (waits for the stream).
      low = at::min(self).item<double>();
      high = at::max(self).item<double>();
      if (low == high) {
        low -= 0.5;
        high += 0.5;
      }
    }
  }
  TORCH_CHECK(std::isfinite(low) && std::isfinite(high), "torch.histc: range of [", low, ", ", high,
              "] is not finite");
  at::native::resize_output(out, {bins});
  std::string element = row_element_type(type, "value", op_name);
  const bool half = type == at::kHalf || type == at::kBFloat16;
  std::string signature = std::string("histc|") + row_dtype_name(type);
  std::string name = std::string("histc_") + row_dtype_name(type);
  RowLaunch launch{op_name, signature, name, [&]() {
                     return element + (half ? "#define ROUND(x) value_load(value_store(x))\n" : "#define ROUND(x) (x)\n") +
                            kHistc;
                   }};
  launch.dim = 0;
  launch.scalars[0] = bits_of(low);
  launch.scalars[1] = bits_of(high);
  launch.scratch_bytes = static_cast<int64_t>(sizeof(int64_t)) * bins;
  launch_rows(launch, {self.reshape({-1}), out});
  return out;
}

at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max) {
  at::Tensor out = at::empty({0}, self.options());
  return histc_out(self, bins, min, max, out);
}

at::Tensor bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights, c10::SymInt minlength_size) {
  record_static_op("aten::bincount", OpPath::kCompiled);
  const int64_t minlength = minlength_size.guard_int(__FILE__, __LINE__);
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  TORCH_CHECK_NOT_IMPLEMENTED(at::isIntegralType(self.scalar_type(), /*includeBool=*/false),
                              "\"bincount\" not implemented for '", c10::toString(self.scalar_type()), "'");
  if (self.dim() == 1 && self.numel() == 0) return at::zeros({minlength}, self.options().dtype(at::kLong));
  TORCH_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  const bool weighted = weights.has_value() && weights->defined();
  TORCH_CHECK(!weighted || (weights->dim() == 1 && weights->size(0) == self.size(0)),
              "weights should be 1-d and have the same length as input");
  // The number of bins is the data's maximum: a stream sync, as on CUDA.
  auto [smallest, largest] = at::aminmax(self);
  TORCH_CHECK(smallest.item<int64_t>() >= 0, "bincount only supports 1-d non-negative integral inputs.");
  const int64_t bins = std::max(largest.item<int64_t>() + 1, minlength);
  // index_add_ runs its indexed stores on one thread in position order: the
  // same sums, in the same order, as the CPU's loop.
  at::Tensor index = self.to(at::kLong);
  if (!weighted) {
    return at::zeros({bins}, self.options().dtype(at::kLong)).index_add_(0, index, at::ones_like(index));
  }
  const c10::ScalarType type = weights->scalar_type() == at::kFloat ? at::kFloat : at::kDouble;
  return at::zeros({bins}, weights->options().dtype(type)).index_add_(0, index, weights->to(type));
}

}  // namespace kiln::torch_integration::compiled
