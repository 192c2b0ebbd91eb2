// Strided nested tensors (torch.nested.nested_tensor, layout torch.strided)
// on the kiln device: the kernels of the NestedTensorPrivateUse1 key.
//
// A nested tensor is a NestedTensorImpl: one contiguous buffer holding every
// component, plus per-component sizes, strides and offsets kept as CPU
// metadata. Its kernels are ATen's: PyTorch registers the same functions for
// NestedTensorCPU and NestedTensorCUDA (native_functions.yaml), and they work
// on the buffer with ordinary at:: ops (add, relu, bmm, softmax, cat, ...),
// which dispatch on the buffer's device. So for kiln, the smallest correct
// route is one boxed kernel for every op on this key: it calls the op's
// NestedTensorCPU kernel with the kiln nested tensor as it is. The buffer
// never leaves the device; each buffer op takes its own kiln path (compiled,
// library or native) and is counted as such, and the nested op itself is
// counted as native.
//
// Registering each of ATen's at::native nested functions for this key by
// name would reach the same code through a list of some 100 entries that
// would go stale with every PyTorch release; the boxed kernel follows the
// CPU's table as it stands.
//
// The exceptions are the CPU nested kernels that do not stay at at:: ops.
// The nested layer norm (forward and backward) calls the LayerNormKernel
// dispatch stub of the buffer's device on raw pointers: that stub has no
// kiln entry, and giving it the CPU's would run the CPU kernel on device
// memory outside stream order. The nested sum over the last dim (and its
// backward) loops over the buffer's raw pointer on the CPU. Kiln registers
// its own for these, composed of kiln ops on the buffer (layer norm: the
// dense layer norm of the buffer viewed as rows of the normalized size), with
// the input's nested sizes. Of the CPU's other nested kernels that differ
// from CUDA's, _transform_bias_rescale_qkv (native multi-head attention's
// fast path) pads its nested input and then works on raw pointers; kiln's
// pads it and calls the dense op on kiln. An op with no
// NestedTensorCPU kernel raises NotImplementedError naming the op and the
// NestedTensorkiln key, as the dispatcher would.
#include <ATen/NestedTensorImpl.h>
#include <ATen/native/nested/NestedTensorUtils.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/native_layer_norm_backward.h>
#include <torch/library.h>

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_transform_bias_rescale_qkv.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>
#include <tuple>

#include "kiln/aten/cpu_fallback.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::native {
namespace {

void nested_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = qualified_op_name(op);
  TORCH_CHECK_NOT_IMPLEMENTED(op.hasComputedKernelForDispatchKey(c10::DispatchKey::NestedTensorCPU),
                              "Could not run '", name, "' with arguments from the 'NestedTensorkiln' backend: "
                              "PyTorch has no strided nested-tensor kernel for it on the CPU either, and kiln's "
                              "nested tensors run the CPU's nested kernels on device memory. Apply the op to the "
                              "components (t.unbind()), or use a jagged nested tensor "
                              "(torch.nested.nested_tensor(..., layout=torch.jagged)), which covers more ops.");
  record_op(name, OpPath::kNative);
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::NestedTensorCPU), stack);
}

// The ops that make a nested tensor from dense kiln tensors. Their CPU
// kernels are ATen's device-generic ones (CUDA registers the same functions,
// but for _nested_from_padded, whose generic kernel is the CPU's).
void dense_to_nested_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  record_op(qualified_op_name(op), OpPath::kNative);
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
}


// Checks the nested input of a layer norm as ATen's nested kernel does, and
// returns (rows, row size).
std::pair<int64_t, int64_t> nested_layer_norm_rows(const at::native::NestedTensorImpl& input,
                                                   c10::IntArrayRef normalized_shape) {
  const int64_t normalized_dims = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(normalized_dims >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., containing "
              "at least one element, but got normalized_shape = ", normalized_shape);
  TORCH_CHECK(at::native::nested_tensor_impl_is_contiguous(&input),
              "NestedTensor layer_norm on kiln requires a contiguous nested tensor");
  int64_t row_size = 1;
  for (int64_t i = 0; i < normalized_dims; ++i) {
    const std::optional<int64_t> size = input.opt_size(-normalized_dims + i);
    TORCH_CHECK(size.has_value(), "normalized_shape extends into irregular dimensions for the nested tensor");
    TORCH_CHECK(normalized_shape[i] == *size, "The shape at dimension ", i,
                "of normalized_shape doesn't match the input");
    row_size *= normalized_shape[i];
  }
  const int64_t rows = row_size == 0 ? 0 : input.get_buffer().numel() / row_size;
  return {rows, row_size};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> nested_layer_norm(const at::Tensor& input,
                                                                 c10::IntArrayRef normalized_shape,
                                                                 const std::optional<at::Tensor>& weight,
                                                                 const std::optional<at::Tensor>& bias,
                                                                 double eps) {
  record_static_op("aten::native_layer_norm", OpPath::kNative);
  TORCH_CHECK(weight.has_value() && weight->defined() && bias.has_value() && bias->defined(),
              "NestedTensor layer_norm requires weight and bias");
  TORCH_CHECK(!weight->is_nested(), "NestedTensor weight not supported for layer_norm");
  TORCH_CHECK(!bias->is_nested(), "NestedTensor bias not supported for layer_norm");
  const auto* nested = at::native::get_nested_tensor_impl(input);
  const auto [rows, row_size] = nested_layer_norm_rows(*nested, normalized_shape);
  TORCH_CHECK(weight->numel() == row_size && bias->numel() == row_size,
              "Expected weight and bias to be of same shape as normalized_shape, but got weight of shape ",
              weight->sizes(), ", bias of shape ", bias->sizes(), " and normalized_shape = ", normalized_shape);
  const at::Tensor rows_view = nested->get_buffer().view({rows, row_size});
  auto [output, mean, rstd] =
      at::native_layer_norm(rows_view, {row_size}, weight->reshape({row_size}), bias->reshape({row_size}), eps);
  return {at::native::wrap_buffer(output.view({-1}), nested->get_nested_sizes()), mean.view({rows}),
          rstd.view({rows})};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> nested_layer_norm_backward(
    const at::Tensor& grad, const at::Tensor& input, c10::IntArrayRef normalized_shape, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    std::array<bool, 3> output_mask) {
  record_static_op("aten::native_layer_norm_backward", OpPath::kNative);
  const auto* nested = at::native::get_nested_tensor_impl(input);
  const auto* nested_grad = at::native::get_nested_tensor_impl(grad);
  TORCH_CHECK(at::native::nested_tensor_impl_is_contiguous(nested_grad),
              "NestedTensor layer_norm backward on kiln requires a contiguous gradient");
  const auto [rows, row_size] = nested_layer_norm_rows(*nested, normalized_shape);
  std::optional<at::Tensor> flat_weight;
  std::optional<at::Tensor> flat_bias;
  if (weight.has_value() && weight->defined()) flat_weight = weight->reshape({row_size});
  if (bias.has_value() && bias->defined()) flat_bias = bias->reshape({row_size});
  auto [grad_input, grad_weight, grad_bias] = at::native_layer_norm_backward(
      nested_grad->get_buffer().view({rows, row_size}), nested->get_buffer().view({rows, row_size}), {row_size},
      mean.view({rows, 1}), rstd.view({rows, 1}), flat_weight, flat_bias, output_mask);
  if (grad_input.defined()) grad_input = at::native::wrap_buffer(grad_input.view({-1}), nested->get_nested_sizes());
  if (grad_weight.defined() && weight.has_value()) grad_weight = grad_weight.view(weight->sizes());
  if (grad_bias.defined() && bias.has_value()) grad_bias = grad_bias.view(bias->sizes());
  return {grad_input, grad_weight, grad_bias};
}

// Where each component starts in a contiguous nested tensor's buffer, and how
// many rows of its last dim it holds.
struct ComponentRows {
  std::vector<int64_t> offsets;  // one per component, then the end
  std::vector<int64_t> rows;
  std::vector<int64_t> lengths;  // size of the last dim
};

ComponentRows component_rows(const at::native::NestedTensorImpl& nested) {
  const at::Tensor sizes = nested.get_nested_sizes();
  const int64_t count = sizes.size(0);
  const int64_t columns = sizes.dim() > 1 ? sizes.size(1) : 0;
  const int64_t* data = sizes.const_data_ptr<int64_t>();
  ComponentRows result;
  result.offsets.push_back(0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rows = 1;
    for (int64_t j = 0; j + 1 < columns; ++j) rows *= data[i * columns + j];
    const int64_t length = columns > 0 ? data[i * columns + columns - 1] : 1;
    result.rows.push_back(rows);
    result.lengths.push_back(length);
    result.offsets.push_back(result.offsets.back() + rows * length);
  }
  return result;
}

void check_nested_sum_dims(const at::Tensor& self, c10::IntArrayRef dims, bool keepdim) {
  TORCH_CHECK(dims.size() == 1, "NestedTensor only allows reduction of a single dimension for now.");
  const int64_t dim = at::maybe_wrap_dim(dims[0], self.dim());
  TORCH_CHECK(dim == self.dim() - 1, "NestedTensor can only be reduced across the last dimension for now ",
              "got dimension ", dim, " instead.");
  TORCH_CHECK(keepdim, "NestedTensor always requires keepdim=True for now.");
}

// ATen's nested sum for the CPU loops over the buffer's raw pointer, outside
// stream order on kiln; this is the same sum as kiln ops: each component's
// buffer viewed as (rows, last dim) and summed over the last dim (all at once
// when every component has the same last dim), in the buffer's dtype.
at::Tensor nested_sum_dim(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                          std::optional<at::ScalarType> dtype) {
  record_static_op("aten::sum.dim_IntList", OpPath::kNative);
  check_nested_sum_dims(self, dims.value_or(c10::IntArrayRef{}), keepdim);
  TORCH_CHECK(!dtype, "NestedTensor does not support dtype argument for now.");
  const auto* nested = at::native::get_nested_tensor_impl(self);
  if (nested->size(0) == 0) return self;
  const at::Tensor buffer = nested->get_buffer();
  const ComponentRows layout = component_rows(*nested);
  at::Tensor output_sizes = nested->get_nested_sizes().clone();
  output_sizes.select(1, -1).fill_(1);
  const at::ScalarType type = buffer.scalar_type();
  const bool same_length = std::all_of(layout.lengths.begin(), layout.lengths.end(),
                                       [&](int64_t length) { return length == layout.lengths.front(); });
  if (same_length && layout.lengths.front() > 0) {
    at::Tensor rows = buffer.narrow(0, 0, layout.offsets.back()).view({-1, layout.lengths.front()});
    return at::native::wrap_buffer(rows.sum({1}, false, type), output_sizes);
  }
  std::vector<at::Tensor> sums;
  for (size_t i = 0; i < layout.rows.size(); ++i) {
    at::Tensor piece = buffer.narrow(0, layout.offsets[i], layout.offsets[i + 1] - layout.offsets[i]);
    sums.push_back(layout.lengths[i] == 0 ? at::zeros({layout.rows[i]}, buffer.options())
                                          : piece.view({layout.rows[i], layout.lengths[i]}).sum({1}, false, type));
  }
  return at::native::wrap_buffer(at::cat(sums), output_sizes);
}

// The gradient of nested_sum_dim: each component's gradient (one value per
// row) broadcast along the summed dim.
at::Tensor nested_sum_backward(const at::Tensor& grad, const at::Tensor& self, at::OptionalIntArrayRef dims,
                               bool keepdim) {
  record_static_op("aten::_nested_sum_backward", OpPath::kNative);
  TORCH_CHECK(grad.is_nested(), "NestedTensor sum backward expects a nested gradient");
  check_nested_sum_dims(self, dims.value_or(c10::IntArrayRef{}), keepdim);
  const auto* nested = at::native::get_nested_tensor_impl(self);
  const auto* nested_grad = at::native::get_nested_tensor_impl(grad);
  const at::Tensor grad_buffer = nested_grad->get_buffer();
  const ComponentRows layout = component_rows(*nested);
  std::vector<at::Tensor> pieces;
  int64_t grad_offset = 0;
  for (size_t i = 0; i < layout.rows.size(); ++i) {
    at::Tensor rows = grad_buffer.narrow(0, grad_offset, layout.rows[i]).view({layout.rows[i], 1});
    pieces.push_back(rows.expand({layout.rows[i], layout.lengths[i]}).reshape({-1}));
    grad_offset += layout.rows[i];
  }
  at::Tensor buffer = pieces.empty() ? grad_buffer.new_empty({0}) : at::cat(pieces);
  return at::native::wrap_buffer(buffer, nested->get_nested_sizes().clone());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> nested_transform_bias_rescale_qkv(const at::Tensor& qkv,
                                                                                 const at::Tensor& qkv_bias,
                                                                                 int64_t num_heads) {
  record_static_op("aten::_transform_bias_rescale_qkv", OpPath::kNative);
  return at::_transform_bias_rescale_qkv(qkv.to_padded_tensor(0), qkv_bias, num_heads);
}

}  // namespace

TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&nested_kernel>());
}

// Ops with a CompositeImplicitAutograd kernel and their own nested kernels:
// the composite would win over the fallback above (and fail on a nested
// tensor's sizes), so they name the same boxed kernel explicitly.
// tests/python/test_nested.py checks this list against native_functions.yaml.
TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("native_layer_norm", TORCH_FN(nested_layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(nested_layer_norm_backward));
  m.impl("sum.dim_IntList", TORCH_FN(nested_sum_dim));
  m.impl("_nested_sum_backward", TORCH_FN(nested_sum_backward));
  m.impl("_transform_bias_rescale_qkv", TORCH_FN(nested_transform_bias_rescale_qkv));
  for (const char* name : {"chunk", "linear", "matmul", "matmul.out", "narrow", "silu_backward",
                           "value_selecting_reduction_backward", "_test_autograd_multiple_dispatch.ntonly"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&nested_kernel>());
  }
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : {"_nested_from_padded", "_nested_tensor_from_mask", "_nested_tensor_from_mask_left_aligned",
                           "_nested_view_from_buffer"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&dense_to_nested_kernel>());
  }
}

}  // namespace kiln::torch_integration::native
