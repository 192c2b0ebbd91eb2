// Compiled softmax and log_softmax, forward and backward, along any dim.
// Registered in aten/compiled/nn/norm/registration.cc.
//
// A forward is three kernels: the max along the dim (a reduction), the sum of
// exp(x - max) along it (a reduction reading the max as a broadcast input),
// then one pointwise kernel: exp(x - max) * (1 / sum), or x - max - log(sum),
// as ATen's CPU kernels compute. Rows holding +inf or only -inf come out NaN,
// as on the CPU. A backward is a reduction (sum of grad * output, or of grad)
// and a pointwise kernel. Half types compute in float32 throughout.
//
// half_to_float (a float16 input, a float32 result) is supported as CUDA
// supports it; the CPU refuses it.
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float);
at::Tensor& softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out);
at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float);
at::Tensor& log_softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out);

at::Tensor softmax_backward_data(const at::Tensor& grad_output, const at::Tensor& output,
                                 int64_t dim, at::ScalarType input_dtype);
at::Tensor& softmax_backward_data_out(const at::Tensor& grad_output, const at::Tensor& output,
                                      int64_t dim, at::ScalarType input_dtype,
                                      at::Tensor& grad_input);
at::Tensor log_softmax_backward_data(const at::Tensor& grad_output, const at::Tensor& output,
                                     int64_t dim, at::ScalarType input_dtype);
at::Tensor& log_softmax_backward_data_out(const at::Tensor& grad_output, const at::Tensor& output,
                                          int64_t dim, at::ScalarType input_dtype,
                                          at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
