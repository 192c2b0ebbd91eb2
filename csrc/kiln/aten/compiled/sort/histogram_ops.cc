// histc as a row kernel (see histogram_ops.h).
#include "kiln/aten/compiled/sort/histogram_ops.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max.h>
#include <ATen/ops/min.h>

#include <cmath>
#include <cstring>
#include <string>

#include "kiln/aten/compiled/launch/row_kernel.h"

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

int64_t bits_of(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

}  // namespace

at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max,
                      at::Tensor& out) {
  const char* op_name = "aten::histc";
  const c10::ScalarType type = self.scalar_type();
  const bool floating = type == at::kHalf || type == at::kBFloat16 || type == at::kFloat || type == at::kDouble;
  TORCH_CHECK_NOT_IMPLEMENTED(floating, "\"histogram_cpu\" not implemented for '", c10::toString(type), "'");
  TORCH_CHECK(out.scalar_type() == type, "torch.histogram: input tensor and hist tensor should have the same dtype,",
              " but got input ", self.dtype(), " and hist ", out.dtype());
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
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

}  // namespace kiln::torch_integration::compiled
