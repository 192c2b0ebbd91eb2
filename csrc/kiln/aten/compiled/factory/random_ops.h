// Compiled random number ops drawing from the kiln device generator
// (c10/generator.h): uniform_, normal_, bernoulli_ (float and tensor p),
// normal with tensor arguments, random_ (all three forms), exponential_,
// log_normal_, cauchy_, geometric_, native_dropout and its backward.
// Registered in aten/compiled/nn/norm/registration.cc.
//
// Every element's numbers are Philox4x32-10 of (seed, offset, the element's
// linear index): each launch reserves one Philox offset under the
// generator's mutex (as CUDA's philox_cuda_state), so torch.manual_seed and
// get_state/set_state replay a stream exactly and two calls never share
// numbers. Values are not the CPU generator's, but the arguments, their
// checks and errors are ATen's (DistributionTemplates.h), and the
// transformations are the CPU's (a float uses its mantissa's worth of bits,
// normal is Box-Muller).
//
// Not checked: bernoulli_ with a tensor p outside [0, 1] (the CPU raises from
// inside its kernel); such a p behaves as clamped.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> generator);
at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> generator);
at::Tensor& bernoulli_float_(at::Tensor& self, double p, std::optional<at::Generator> generator);
at::Tensor& bernoulli_tensor_(at::Tensor& self, const at::Tensor& p, std::optional<at::Generator> generator);
at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> generator);
at::Tensor& random_to_(at::Tensor& self, int64_t to, std::optional<at::Generator> generator);
at::Tensor& random_from_(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                         std::optional<at::Generator> generator);
at::Tensor& exponential_(at::Tensor& self, double lambda, std::optional<at::Generator> generator);
at::Tensor& log_normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> generator);
at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, std::optional<at::Generator> generator);
at::Tensor& geometric_(at::Tensor& self, double p, std::optional<at::Generator> generator);

// normal with tensor mean and/or std: a standard normal fill, then ATen's
// own mul_/add_ (DistributionTemplates' normal_impl).
at::Tensor normal_tensor_float(const at::Tensor& mean, double std, std::optional<at::Generator> generator);
at::Tensor& normal_tensor_float_out(const at::Tensor& mean, double std, std::optional<at::Generator> generator,
                                    at::Tensor& out);
at::Tensor normal_float_tensor(double mean, const at::Tensor& std, std::optional<at::Generator> generator);
at::Tensor& normal_float_tensor_out(double mean, const at::Tensor& std, std::optional<at::Generator> generator,
                                    at::Tensor& out);
at::Tensor normal_tensor_tensor(const at::Tensor& mean, const at::Tensor& std,
                                std::optional<at::Generator> generator);
at::Tensor& normal_tensor_tensor_out(const at::Tensor& mean, const at::Tensor& std,
                                     std::optional<at::Generator> generator, at::Tensor& out);

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train);
at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask, double scale);

}  // namespace kiln::torch_integration::compiled
