// The samplers torch.distributions reaches beyond the compiled random ops:
// _standard_gamma (Gamma, Chi2, StudentT, Beta, FisherSnedecor),
// _sample_dirichlet (Dirichlet, Beta), poisson (Poisson), binomial
// (Binomial), and the reparameterised gradients of gamma and Dirichlet
// samples (rsample's backward).
//
// Why native rather than compiled: these are rejection samplers, which draw
// an unbounded number of random numbers per element, and Kiln's IR draws a
// fixed number (kRandomBits). Each kernel is a loop over the elements, queued
// on the device's stream like any launch; every element has its own Philox
// stream from the kiln generator (element_random_stream.h), so
// torch.manual_seed governs them and a run is reproducible. The sampling
// algorithms are ATen's own (ATen/native/Distributions.h, header-only: Marsaglia-Tsang
// gamma, BTRS binomial, the gradients), the ones CPU and CUDA use; Poisson,
// which ATen keeps private to its CPU source, is Hormann's transformed
// rejection (PTRS) with the product method for small rates, as the CPU's.
//
// The loops read and write float64: inputs are broadcast and converted on the
// device first, and the result converted back to the input's dtype (float16
// and bfloat16 included, as on CUDA; the CPU refuses them). Clamps follow the
// CPU: a gamma sample is at least the dtype's smallest normal number, a
// Dirichlet sample lies in [smallest normal, largest number below 1].
#include <ATen/ExpandUtils.h>
#include <ATen/native/Distributions.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kiln/aten/device_checks.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/native/element_random_stream.h"
#include "kiln/aten/native/native_kernels.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration::native {
namespace {

void check_floating(const at::Tensor& tensor, const char* kernel_name) {
  const at::ScalarType type = tensor.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kHalf ||
                                  type == at::kBFloat16,
                              "\"", kernel_name, "\" not implemented for '", c10::toString(type), "'");
}

// Bounds of a sample of dtype `type`, as doubles: its smallest normal
// number, and the largest number below one.
double smallest_normal(at::ScalarType type) {
  switch (type) {
    case at::kHalf: return static_cast<double>(std::numeric_limits<at::Half>::min());
    case at::kBFloat16: return static_cast<double>(std::numeric_limits<at::BFloat16>::min());
    case at::kFloat: return static_cast<double>(std::numeric_limits<float>::min());
    default: return std::numeric_limits<double>::min();
  }
}

double largest_below_one(at::ScalarType type) {
  switch (type) {
    case at::kHalf: return 1.0 - 0x1p-11;
    case at::kBFloat16: return 1.0 - 0x1p-8;
    case at::kFloat: return 1.0 - 0x1p-24;
    default: return 1.0 - 0x1p-53;
  }
}

// `tensor` broadcast to `shape`, as a contiguous float64 kiln tensor.
at::Tensor dense_double(const at::Tensor& tensor, c10::IntArrayRef shape) {
  return tensor.expand(shape).to(at::kDouble).contiguous();
}

// Queues `body(element, inputs, output)` for every element of a float64
// result of `shape` on the stream of `inputs[0]`, and returns the result in
// `dtype`. Inputs are contiguous float64 kiln tensors of `shape`.
template <typename Body>
at::Tensor launch_double_loop(const char* name, const std::vector<at::Tensor>& inputs, c10::IntArrayRef shape,
                              at::ScalarType dtype, Body body) {
  at::Tensor output = at::empty(shape, inputs.front().options().dtype(at::kDouble));
  const int64_t numel = output.numel();
  if (numel > 0) {
    const size_t bytes = static_cast<size_t>(numel) * sizeof(double) * (inputs.size() + 1);
    // The work holds the tensors, so their memory lives until it ran.
    check_status(stream_of(output).launch(name, bytes, [output, inputs, numel, body]() {
      std::vector<const double*> data;
      for (const at::Tensor& input : inputs) data.push_back(input.const_data_ptr<double>());
      double* out = output.data_ptr<double>();
      for (int64_t element = 0; element < numel; ++element) out[element] = body(element, data.data());
      return Status();
    }));
  }
  return dtype == at::kDouble ? output : output.to(dtype);
}

// A gamma(alpha, 1) sample from `stream` by ATen's Marsaglia-Tsang sampler.
double draw_gamma(double alpha, ElementRandomStream& stream) {
  auto uniform = [&stream]() { return stream.uniform(); };
  auto normal = [&stream]() { return stream.normal(); };
  ::BaseSampler<double, decltype(uniform)> standard_uniform(uniform);
  ::BaseSampler<double, decltype(normal)> standard_normal(normal);
  return ::sample_gamma<double, double, decltype(uniform), decltype(normal)>(alpha, standard_uniform,
                                                                                       standard_normal);
}

// Hormann's PTRS ("The transformed rejection method for generating Poisson
// random variables", 1993) for rates of 10 and more; below, the number of
// uniforms whose product stays above exp(-rate).
double draw_poisson(double rate, ElementRandomStream& stream) {
  if (rate == 0) return 0;
  if (std::isinf(rate)) return rate;
  if (rate < 10) {
    const double threshold = std::exp(-rate);
    double count = 0;
    double product = stream.uniform();
    while (product > threshold) {
      count += 1;
      product *= stream.uniform();
    }
    return count;
  }
  const double root = std::sqrt(rate);
  const double log_rate = std::log(rate);
  const double b = 0.931 + 2.53 * root;
  const double a = -0.059 + 0.02483 * b;
  const double log_inverse_alpha = std::log(1.1239 + 1.1328 / (b - 3.4));
  const double acceptance = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = stream.uniform() - 0.5;
    const double v = stream.uniform();
    const double margin = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / margin + b) * u + rate + 0.43);
    if (margin >= 0.07 && v <= acceptance) return k;
    if (k < 0 || (margin < 0.013 && v > margin)) continue;
    if (std::log(v) + log_inverse_alpha - std::log(a / (margin * margin) + b) <=
        -rate + k * log_rate - std::lgamma(k + 1)) {
      return k;
    }
  }
}

}  // namespace

at::Tensor standard_gamma(const at::Tensor& alpha, std::optional<at::Generator> generator) {
  record_static_op("aten::_standard_gamma", OpPath::kNative);
  check_floating(alpha, "gamma_kiln");
  const double smallest = smallest_normal(alpha.scalar_type());
  const ElementRandomLaunch launch = reserve_element_random_launch(generator, alpha.device(), alpha.numel());
  return launch_double_loop("aten::_standard_gamma", {dense_double(alpha, alpha.sizes())}, alpha.sizes(),
                            alpha.scalar_type(), [launch, smallest](int64_t element, const double* const* inputs) {
                              ElementRandomStream stream(launch, element);
                              const double sample = draw_gamma(inputs[0][element], stream);
                              return smallest < sample ? sample : smallest;  // NaN gives the bound, as the CPU
                            });
}

at::Tensor sample_dirichlet(const at::Tensor& alpha, std::optional<at::Generator> generator) {
  record_static_op("aten::_sample_dirichlet", OpPath::kNative);
  check_floating(alpha, "dirichlet_kiln");
  const int64_t categories = alpha.dim() == 0 ? 1 : alpha.size(-1);
  const int64_t numel = alpha.numel();
  at::Tensor concentration = dense_double(alpha, alpha.sizes());
  at::Tensor output = at::empty(alpha.sizes(), concentration.options());
  if (numel > 0) {
    const ElementRandomLaunch launch = reserve_element_random_launch(generator, alpha.device(), numel);
    const double smallest = smallest_normal(alpha.scalar_type());
    const double largest = largest_below_one(alpha.scalar_type());
    const size_t bytes = static_cast<size_t>(numel) * sizeof(double) * 2;
    check_status(stream_of(output).launch(
        "aten::_sample_dirichlet", bytes, [concentration, output, numel, categories, launch, smallest, largest]() {
          const double* in = concentration.const_data_ptr<double>();
          double* out = output.data_ptr<double>();
          // Each row: gamma samples in float64 (at least the smallest normal
          // float64, so a row never sums to zero), normalised.
          for (int64_t row = 0; row < numel; row += categories) {
            double sum = 0;
            for (int64_t element = row; element < row + categories; ++element) {
              ElementRandomStream stream(launch, element);
              const double sample = draw_gamma(in[element], stream);
              out[element] = std::numeric_limits<double>::min() < sample ? sample : std::numeric_limits<double>::min();
              sum += out[element];
            }
            for (int64_t element = row; element < row + categories; ++element) {
              out[element] = std::min(largest, std::max(smallest, out[element] / sum));
            }
          }
          return Status();
        }));
  }
  return alpha.scalar_type() == at::kDouble ? output : output.to(alpha.scalar_type());
}

at::Tensor poisson(const at::Tensor& rates, std::optional<at::Generator> generator) {
  record_static_op("aten::poisson", OpPath::kNative);
  check_floating(rates, "poisson_kiln");
  at::Tensor dense = dense_double(rates, rates.sizes());
  // The CPU raises for a negative or NaN rate; checking it needs the values,
  // so this is a sync point (as .item() is), and nothing is queued on error.
  if (dense.numel() > 0) {
    const bool valid = dense.ge(0).all().item<bool>();
    TORCH_CHECK(valid, "invalid Poisson rate, expected rate to be non-negative");
  }
  const ElementRandomLaunch launch = reserve_element_random_launch(generator, rates.device(), rates.numel());
  return launch_double_loop("aten::poisson", {dense}, rates.sizes(), rates.scalar_type(),
                            [launch](int64_t element, const double* const* inputs) {
                              ElementRandomStream stream(launch, element);
                              return draw_poisson(inputs[0][element], stream);
                            });
}

at::Tensor binomial(const at::Tensor& count, const at::Tensor& prob, std::optional<at::Generator> generator) {
  record_static_op("aten::binomial", OpPath::kNative);
  check_floating(count, "binomial_kiln");
  check_same_device({count, prob});
  TORCH_CHECK(count.scalar_type() == prob.scalar_type(), "expected scalar type ", count.scalar_type(),
              " but found ", prob.scalar_type());
  const std::vector<int64_t> shape = at::infer_size(count.sizes(), prob.sizes());
  const int64_t numel = c10::multiply_integers(shape);
  const ElementRandomLaunch launch = reserve_element_random_launch(generator, count.device(), numel);
  return launch_double_loop(
      "aten::binomial", {dense_double(count, shape), dense_double(prob, shape)}, shape, count.scalar_type(),
      [launch](int64_t element, const double* const* inputs) {
        ElementRandomStream stream(launch, element);
        auto uniform = [&stream]() { return stream.uniform(); };
        ::BaseSampler<double, decltype(uniform)> standard_uniform(uniform);
        return ::sample_binomial<double, double, decltype(uniform)>(inputs[0][element],
                                                                              inputs[1][element], standard_uniform);
      });
}

at::Tensor standard_gamma_grad(const at::Tensor& self, const at::Tensor& output) {
  record_static_op("aten::_standard_gamma_grad", OpPath::kNative);
  check_floating(self, "_standard_gamma_grad_kiln");
  check_same_device({self, output});
  const std::vector<int64_t> shape = at::infer_size(self.sizes(), output.sizes());
  return launch_double_loop("aten::_standard_gamma_grad", {dense_double(self, shape), dense_double(output, shape)},
                            shape, self.scalar_type(), [](int64_t element, const double* const* inputs) {
                              return ::standard_gamma_grad_one<double, double>(inputs[0][element],
                                                                                         inputs[1][element]);
                            });
}

at::Tensor dirichlet_grad(const at::Tensor& x, const at::Tensor& alpha, const at::Tensor& total) {
  record_static_op("aten::_dirichlet_grad", OpPath::kNative);
  check_floating(x, "_dirichlet_grad_kiln");
  check_same_device({x, alpha, total});
  const std::vector<int64_t> shape = at::infer_size(at::infer_size(x.sizes(), alpha.sizes()), total.sizes());
  return launch_double_loop(
      "aten::_dirichlet_grad", {dense_double(x, shape), dense_double(alpha, shape), dense_double(total, shape)},
      shape, x.scalar_type(), [](int64_t element, const double* const* inputs) {
        return ::dirichlet_grad_one<double, double>(inputs[0][element], inputs[1][element],
                                                              inputs[2][element]);
      });
}

}  // namespace kiln::torch_integration::native
