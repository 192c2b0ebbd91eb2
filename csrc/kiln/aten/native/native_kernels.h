// Kernels Kiln implements natively for the kiln device: tensor creation,
// views, storage management, copies between host and device, fill, and
// reading a scalar back, and the samplers of torch.distributions that do not
// fit a compiled kernel. registration.cc binds them to ATen op names.
//
// Each kernel records itself in op tracking under the path "native". Work on
// device memory is queued on the device's current stream; copies to pageable
// host memory and scalar reads wait for it.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/Scalar.h>
#include <c10/core/Storage.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::native {

// tensor_factories.cc
at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout,
                               std::optional<c10::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format);
at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory);

// views.cc
at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset);
at::Tensor view(const at::Tensor& self, c10::IntArrayRef size);
at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride);
at::Tensor unfold(const at::Tensor& self, int64_t dimension, int64_t size, int64_t step);
at::Tensor view_as_real(const at::Tensor& self);
at::Tensor view_as_complex(const at::Tensor& self);

// storage.cc
const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format);
at::Tensor& set_storage_with_offset(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                                    c10::IntArrayRef size, c10::IntArrayRef stride);
at::Tensor& set_storage(at::Tensor& self, c10::Storage source);
at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source);
at::Tensor& set_empty(at::Tensor& self);
// Whether `self`'s TensorImpl may take `from`'s metadata (`param.data = t`).
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from);

// copy.cc
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& destination, bool non_blocking);
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& destination);
// The same, for a source that is a conjugated or negated view (registered for
// the Conjugate and Negative keys).
at::Tensor copy_from_resolving_views(const at::Tensor& self, const at::Tensor& destination,
                                     bool non_blocking);
at::Tensor copy_from_and_resize_resolving_views(const at::Tensor& self,
                                                const at::Tensor& destination);

// fill.cc
at::Tensor& fill_scalar(at::Tensor& self, const c10::Scalar& value);
at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value);
at::Tensor& zero(at::Tensor& self);
c10::Scalar local_scalar_dense(const at::Tensor& self);

// dropout.cc
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train);

// fused_rnn_cells.cc
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias);
std::tuple<at::Tensor, at::Tensor> fused_gru_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias);

// distributions.cc: samplers and gradients behind torch.distributions.
at::Tensor standard_gamma(const at::Tensor& alpha, std::optional<at::Generator> generator);
at::Tensor sample_dirichlet(const at::Tensor& alpha, std::optional<at::Generator> generator);
at::Tensor poisson(const at::Tensor& rates, std::optional<at::Generator> generator);
at::Tensor binomial(const at::Tensor& count, const at::Tensor& prob, std::optional<at::Generator> generator);
at::Tensor standard_gamma_grad(const at::Tensor& self, const at::Tensor& output);
at::Tensor dirichlet_grad(const at::Tensor& x, const at::Tensor& alpha, const at::Tensor& total);

// assert_async.cc
void assert_async(const at::Tensor& self);
void assert_async_message(const at::Tensor& self, c10::string_view message);

// multinomial.cc
at::Tensor multinomial(const at::Tensor& self, int64_t samples, bool replacement,
                       std::optional<at::Generator> generator);
at::Tensor& multinomial_out(const at::Tensor& self, int64_t samples, bool replacement,
                            std::optional<at::Generator> generator, at::Tensor& out);

}  // namespace kiln::torch_integration::native
