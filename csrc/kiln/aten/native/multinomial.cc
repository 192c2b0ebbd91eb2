// torch.multinomial on the kiln device.
//
// The op itself is ATen's device-generic at::native::multinomial(_out), the
// one CPU and CUDA register: its argument checks and errors, and, without
// replacement or for one sample, the exponential race (argmax or topk of
// p / q with q ~ Exp(1) drawn by exponential_), which runs as compiled kiln
// ops, in float64 (race_input below). Otherwise ATen calls multinomial_with_replacement_stub, whose PrivateUse1 entry is
// the kernel below (the CPU's and CUDA's entries are their own kernels).
//
// The kernel is inverse-CDF sampling per row, in float64 whatever the
// probabilities' dtype: one uniform per sample from the row's element
// streams of the kiln generator (element_random_stream.h), located by binary
// search in the row's running sums. A zero-probability category is never
// drawn: the search finds the first running sum strictly above u * total.
// Like the CPU it raises for a negative, infinite or NaN entry and for a row
// summing to zero; it checks every row before writing, so a failed call
// leaves `result` as it was. Those errors need the values, so the kernel
// runs at a sync point, in stream order (the path without replacement syncs
// for its own checks too).
#include <ATen/ops/multinomial_native.h>
#include <ATen/ops/_to_copy.h>
#include <ATen/native/UnaryOps.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/native/element_random_stream.h"
#include "kiln/aten/native/native_kernels.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration::native {
namespace {

// The first error of any row of `probabilities` (rows x categories, float64,
// contiguous), or an empty string; the CPU's messages, in its order.
std::string check_rows(const double* probabilities, int64_t rows, int64_t categories) {
  for (int64_t row = 0; row < rows; ++row) {
    double sum = 0;
    for (int64_t category = 0; category < categories; ++category) {
      const double value = probabilities[row * categories + category];
      if (!(value >= 0)) return "invalid multinomial distribution (encountering probability entry < 0)";
      if (!std::isfinite(value)) {
        return "invalid multinomial distribution (encountering probability entry = infinity or NaN)";
      }
      sum += value;
    }
    if (!(sum > 0)) return "invalid multinomial distribution (sum of probabilities <= 0)";
  }
  return std::string();
}

void sample_rows(const double* probabilities, int64_t rows, int64_t categories, int64_t samples,
                 const ElementRandomLaunch& launch, int64_t* result, int64_t row_stride, int64_t sample_stride) {
  std::vector<double> running(static_cast<size_t>(categories));
  for (int64_t row = 0; row < rows; ++row) {
    const double* row_probabilities = probabilities + row * categories;
    double sum = 0;
    int64_t last_positive = 0;
    for (int64_t category = 0; category < categories; ++category) {
      sum += row_probabilities[category];
      running[category] = sum;
      if (row_probabilities[category] > 0) last_positive = category;
    }
    for (int64_t sample = 0; sample < samples; ++sample) {
      ElementRandomStream stream(launch, static_cast<uint64_t>(row * samples + sample));
      const double target = stream.uniform() * sum;
      // First category whose running sum exceeds the target: its probability
      // is positive, since the sum before it does not.
      int64_t low = 0;
      int64_t high = categories;
      while (low < high) {
        const int64_t middle = low + (high - low) / 2;
        if (running[middle] <= target) {
          low = middle + 1;
        } else {
          high = middle;
        }
      }
      // A target rounded up to the total (u within 2^-53 of 1) finds none.
      result[row * row_stride + sample * sample_stride] = low < categories ? low : last_positive;
    }
  }
}

void multinomial_with_replacement(at::Tensor& result, const at::Tensor& self, int64_t samples,
                                  std::optional<at::Generator> generator) {
  const int64_t categories = self.size(-1);
  const int64_t rows = self.dim() > 1 ? self.size(0) : 1;
  at::Tensor probabilities = self.to(at::kDouble).contiguous();
  const ElementRandomLaunch launch = reserve_element_random_launch(generator, self.device(), rows * samples);
  const int64_t row_stride = result.dim() > 1 ? result.stride(0) : 0;
  const int64_t sample_stride = result.stride(-1);
  std::string error;
  check_status(stream_of(result).run_synchronously("aten::multinomial", [&]() {
    const double* data = probabilities.const_data_ptr<double>();
    error = check_rows(data, rows, categories);
    if (error.empty()) {
      sample_rows(data, rows, categories, samples, launch, result.data_ptr<int64_t>(), row_stride, sample_stride);
    }
    return Status();
  }));
  TORCH_CHECK(error.empty(), error);
}

const bool kStubRegistered = [] {
  at::native::multinomial_with_replacement_stub.set_privateuse1_dispatch_ptr(&multinomial_with_replacement);
  return true;
}();

// ATen's exponential race divides p by q ~ Exp(1) drawn in p's dtype. Kiln's
// exponential_ draws q from a uniform of the dtype's mantissa bits, so q is
// exactly 0 with probability 2^-8 in bfloat16 (2^-11 float16, 2^-24
// float32), and p / q is then NaN for a category of probability zero, which
// topk and argmax take first: a zero-probability category would be drawn.
// The race runs in float64 instead (q = 0 with probability 2^-53, the CPU's
// own float64 risk); integer inputs pass unconverted to meet ATen's check.
at::Tensor race_input(const at::Tensor& self) {
  return at::isFloatingType(self.scalar_type()) ? self.to(at::kDouble) : self;
}

}  // namespace

at::Tensor multinomial(const at::Tensor& self, int64_t samples, bool replacement,
                       std::optional<at::Generator> generator) {
  record_static_op("aten::multinomial", OpPath::kNative);
  return at::native::multinomial(race_input(self), samples, replacement, std::move(generator));
}

at::Tensor& multinomial_out(const at::Tensor& self, int64_t samples, bool replacement,
                            std::optional<at::Generator> generator, at::Tensor& out) {
  record_static_op("aten::multinomial.out", OpPath::kNative);
  return at::native::multinomial_out(race_input(self), samples, replacement, std::move(generator), out);
}

}  // namespace kiln::torch_integration::native
