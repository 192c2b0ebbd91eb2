// _adaptive_avg_pool3d (and adaptive_avg_pool3d.out) and its backward
// (registered in aten/compiled/nn/spatial/registration.cc).
//
// Output o along a dim of input size n and output size m averages inputs
// [floor(o * n / m), ceil((o + 1) * n / m)). The host lists each dim's window
// per output coordinate (element offsets, -1 past the window's end, up to the
// longest); the forward sums the window in (d, h, w) order and divides by its
// depth, height and width in turn, each step rounded to the tensor's dtype,
// as the CPU's scalar_t arithmetic does.
// The backward runs over grad_output and, innermost, each window's taps, in
// the CPU's order, adding grad_output / kd / kh / kw (each step rounded to
// the tensor's dtype, as the CPU's scalar_t arithmetic) at every tap.
// Windows over kMaxTaps taps keep the CPU's kernels.
//
// Errors and dtypes (floating) are the CPU's.
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_adaptive_avg_pool3d_backward_ops.h>
#include <ATen/ops/_adaptive_avg_pool3d_ops.h>
#include <ATen/ops/adaptive_avg_pool3d_ops.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros_like.h>

#include <string>
#include <vector>

#include "kiln/aten/compiled/launch/indexed_kernel.h"
#include "kiln/aten/compiled/nn/pool/adaptive_avg_pool3d.h"
#include "kiln/aten/cpu_fallback.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

constexpr int64_t kMaxTaps = 216;

int64_t longest_window(int64_t input, int64_t output) {
  int64_t longest = 1;
  for (int64_t o = 0; o < output; ++o) {
    longest = std::max(longest, ((o + 1) * input + output - 1) / output - (o * input) / output);
  }
  return longest;
}

// Element offsets of output o's window taps (entry o * taps + t; -1 past the
// window) along one dim of `input` size, and each window's length (entry o).
std::pair<at::Tensor, at::Tensor> window_tables(int64_t input, int64_t output, int64_t taps,
                                                int64_t stride, const at::Device& device) {
  at::Tensor offsets = at::empty({output * taps}, at::TensorOptions().dtype(at::kLong));
  at::Tensor lengths = at::empty({output}, at::TensorOptions().dtype(at::kLong));
  int64_t* offset = offsets.data_ptr<int64_t>();
  int64_t* length = lengths.data_ptr<int64_t>();
  for (int64_t o = 0; o < output; ++o) {
    const int64_t start = (o * input) / output;
    const int64_t end = ((o + 1) * input + output - 1) / output;
    length[o] = end - start;
    for (int64_t t = 0; t < taps; ++t) offset[o * taps + t] = start + t < end ? (start + t) * stride : -1;
  }
  return {offsets.to(device), lengths.to(device)};
}

void check_input(const at::Tensor& input, at::IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 3, "adaptive_avg_pool3d: output_size must be 3");
  for (int64_t dim = 1; dim < input.dim(); ++dim) {
    TORCH_CHECK(input.size(dim) > 0, "adaptive_avg_pool3d(): Expected input to have non-zero size "
                "for non-batch dimensions, but input has sizes ", input.sizes(), " with dimension ",
                dim, " being empty");
  }
  TORCH_CHECK(input.dim() == 4 || input.dim() == 5,
              "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got ", input.sizes());
}

void check_floating(const at::Tensor& tensor, const char* name) {
  const at::ScalarType type = tensor.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(type), "\"", name, "\" not implemented for '",
                              c10::toString(type), "'");
}

at::Tensor batched(const at::Tensor& tensor) { return tensor.dim() == 5 ? tensor : tensor.unsqueeze(0); }

// Operands: the tables of each dim over an iteration space of `rank` dims
// whose dims 2..4 are the output's spatial dims and, when `tap_dims`, dims
// 5..7 each dim's taps.
void add_tables(std::vector<KernelOperand>& inputs, const at::Tensor& input, at::IntArrayRef out,
                const int64_t* taps, int64_t rank, bool tap_dims) {
  for (int k = 0; k < 3; ++k) {
    auto [offsets, lengths] = window_tables(input.size(2 + k), out[2 + k], taps[k], input.stride(2 + k),
                                            input.device());
    c10::DimVector offset_strides(rank, 0), length_strides(rank, 0);
    offset_strides[2 + k] = taps[k];
    length_strides[2 + k] = 1;
    if (tap_dims) offset_strides[5 + k] = 1;
    inputs.push_back(operand_with_strides(offsets, offset_strides));
    inputs.push_back(operand_with_strides(lengths, length_strides));
  }
}

bool too_large(const int64_t* taps) { return taps[0] * taps[1] * taps[2] > kMaxTaps; }

}  // namespace

at::Tensor& adaptive_avg_pool3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                    at::Tensor& out) {
  check_input(self, output_size);
  TORCH_CHECK(self.dtype() == out.dtype(), "expected dtype ", self.dtype(),
              " for `output` but got dtype ", out.dtype());
  check_floating(self, "adaptive_avg_pool3d_cpu");
  const int64_t rank = self.dim();
  const int64_t taps[3] = {longest_window(self.size(rank - 3), output_size[0]),
                           longest_window(self.size(rank - 2), output_size[1]),
                           longest_window(self.size(rank - 1), output_size[2])};
  if (too_large(taps)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::adaptive_avg_pool3d_out>::call(
        self, output_size, out);
  }
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end() - 3);
  sizes.insert(sizes.end(), output_size.begin(), output_size.end());
  out.resize_(sizes);
  if (out.numel() == 0) return out;
  at::Tensor input = batched(self), output = batched(out);
  std::vector<KernelOperand> inputs{operand_with_strides(input, {input.stride(0), input.stride(1), 0, 0, 0})};
  add_tables(inputs, input, output.sizes(), taps, 5, /*tap_dims=*/false);
  const std::string key = "adaptive_avg_pool3d|" + std::to_string(taps[0]) + "x" +
                          std::to_string(taps[1]) + "x" + std::to_string(taps[2]);
  IndexedKernelSpec spec;
  spec.key = key;
  spec.body = [&taps](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    const ir::DType storage = context.input_dtypes[0];
    const ir::DType compute = ir::compute_dtype(storage);
    auto i64 = [&](int64_t value) { return builder.constant(static_cast<double>(value), ir::DType::kInt64); };
    std::vector<std::vector<ValueId>> offset(3), valid(3);
    for (int k = 0; k < 3; ++k) {
      for (int64_t t = 0; t < taps[k]; ++t) {
        ValueId entry = builder.indexed_load(1 + 2 * k, i64(t));
        offset[k].push_back(entry);
        valid[k].push_back(builder.binary(OpCode::kLessEqual, i64(0), entry));
      }
    }
    ValueId sum = builder.constant(0, compute);
    for (int64_t d = 0; d < taps[0]; ++d) {
      for (int64_t h = 0; h < taps[1]; ++h) {
        for (int64_t w = 0; w < taps[2]; ++w) {
          ValueId ok = builder.binary(OpCode::kLogicalAnd, builder.binary(OpCode::kLogicalAnd, valid[0][d], valid[1][h]),
                                      valid[2][w]);
          ValueId at = builder.select(ok, builder.binary(OpCode::kAdd, builder.binary(OpCode::kAdd, offset[0][d], offset[1][h]),
                                                         offset[2][w]), i64(0));
          ValueId value = builder.indexed_load(0, at);
          // The CPU sums (and divides) in the tensor's own dtype: each step
          // rounds for the half types.
          sum = builder.select(ok, builder.cast(builder.binary(OpCode::kAdd, sum, value), storage), sum);
        }
      }
    }
    for (int k = 0; k < 3; ++k) {
      sum = builder.cast(builder.binary(OpCode::kDivide, sum, builder.cast(builder.load(2 + 2 * k), compute)),
                         storage);
    }
    builder.store(0, builder.cast(sum, context.output_dtypes[0]));
  };
  launch_indexed_kernel("aten::_adaptive_avg_pool3d", spec, output.sizes(), inputs, {operand_of(output)});
  return out;
}

at::Tensor adaptive_avg_pool3d(const at::Tensor& self, at::IntArrayRef output_size) {
  at::Tensor out = at::empty({0}, self.options());
  return adaptive_avg_pool3d_out(self, output_size, out);
}

at::Tensor adaptive_avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  TORCH_CHECK(grad_output.dim() == self.dim() && (self.dim() == 4 || self.dim() == 5),
              "adaptive_avg_pool3d_backward(): Expected 4D or 5D grad_output of the input's rank, got ",
              grad_output.sizes());
  check_floating(grad_output, "adaptive_avg_pool3d_backward_cpu");
  const int64_t rank = self.dim();
  const int64_t taps[3] = {longest_window(self.size(rank - 3), grad_output.size(rank - 3)),
                           longest_window(self.size(rank - 2), grad_output.size(rank - 2)),
                           longest_window(self.size(rank - 1), grad_output.size(rank - 1))};
  if (too_large(taps)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::_adaptive_avg_pool3d_backward>::call(
        grad_output, self);
  }
  at::Tensor grad_input = at::zeros_like(self, at::MemoryFormat::Contiguous);
  if (grad_output.numel() == 0) return grad_input;
  at::Tensor gradient = batched(grad_output), target = batched(grad_input);
  c10::DimVector shape(gradient.sizes().begin(), gradient.sizes().end());
  shape.insert(shape.end(), taps, taps + 3);
  c10::DimVector gradient_strides(gradient.strides().begin(), gradient.strides().end());
  gradient_strides.resize(8, 0);
  std::vector<KernelOperand> inputs{operand_with_strides(gradient, gradient_strides)};
  add_tables(inputs, target, gradient.sizes(), taps, 8, /*tap_dims=*/true);
  IndexedKernelSpec spec;
  spec.key = "adaptive_avg_pool3d_backward";
  spec.single_threaded = true;
  spec.logical_order = true;
  spec.body = [](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    const ir::DType storage = context.output_dtypes[0];
    const ir::DType compute = ir::compute_dtype(storage);
    ValueId zero = builder.constant(0, ir::DType::kInt64);
    ValueId offset = zero;
    ValueId ok = -1;
    ValueId delta = builder.load(0);
    for (int k = 0; k < 3; ++k) {
      ValueId entry = builder.load(1 + 2 * k);
      ValueId inside = builder.binary(OpCode::kLessEqual, zero, entry);
      ok = k == 0 ? inside : builder.binary(OpCode::kLogicalAnd, ok, inside);
      offset = builder.binary(OpCode::kAdd, offset, entry);
      delta = builder.cast(builder.binary(OpCode::kDivide, delta, builder.cast(builder.load(2 + 2 * k), compute)),
                           storage);
    }
    // Taps past a window's end add zero at the plane's first element.
    builder.store_indexed(0, builder.select(ok, delta, builder.constant(0, builder.dtype_of(delta))),
                          builder.select(ok, offset, zero), /*accumulate=*/true);
  };
  launch_indexed_kernel("aten::_adaptive_avg_pool3d_backward", spec, shape, inputs,
                        {operand_with_strides(target, {target.stride(0), target.stride(1), 0, 0, 0, 0, 0, 0})});
  return grad_input;
}

at::Tensor& adaptive_avg_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             at::Tensor& grad_input) {
  at::Tensor result = adaptive_avg_pool3d_backward(grad_output, self);
  grad_input.resize_(result.sizes());
  grad_input.copy_(result);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
