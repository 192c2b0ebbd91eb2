// _adaptive_avg_pool3d (and adaptive_avg_pool3d.out) and its backward
// (registered in nn/pool/registration.cc).
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
// Windows over kMaxTaps taps keep the CPU's kernels. Tables, operands and
// tap visits: window_tables.h.
//
// Errors and dtypes (floating) are the CPU's.
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_adaptive_avg_pool3d_backward_ops.h>
#include <ATen/ops/_adaptive_avg_pool3d_ops.h>
#include <ATen/ops/adaptive_avg_pool3d_ops.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros_like.h>

#include <array>
#include <vector>

#include "kiln/aten/compiled/launch/indexed_kernel.h"
#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/compiled/nn/pool/adaptive_avg_pool3d.h"
#include "kiln/aten/compiled/nn/pool/window_tables.h"
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
DimTables dim_tables(int64_t input, int64_t output, int64_t taps, int64_t stride,
                     const at::Device& device) {
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

// The tables of the three dims of batched `input` pooled into `output` sizes,
// `taps` tap slots per output.
std::array<DimTables, 3> window_tables(const at::Tensor& input, at::IntArrayRef output,
                                       const std::array<int64_t, 3>& taps) {
  std::array<DimTables, 3> tables;
  for (int k = 0; k < 3; ++k) {
    tables[k] = dim_tables(input.size(2 + k), output[2 + k], taps[k], input.stride(2 + k), input.device());
  }
  return tables;
}

bool too_large(const std::array<int64_t, 3>& taps) { return taps[0] * taps[1] * taps[2] > kMaxTaps; }

}  // namespace

at::Tensor& adaptive_avg_pool3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                    at::Tensor& out) {
  check_input(self, output_size);
  TORCH_CHECK(self.dtype() == out.dtype(), "expected dtype ", self.dtype(),
              " for `output` but got dtype ", out.dtype());
  check_floating(self, "adaptive_avg_pool3d_cpu");
  const int64_t rank = self.dim();
  const std::array<int64_t, 3> taps = {longest_window(self.size(rank - 3), output_size[0]),
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
  at::Tensor input = batched_5d(self), output = batched_5d(out);
  Signature key("adaptive_avg_pool3d|");
  key.append_number(taps[0]).append('x').append_number(taps[1]).append('x').append_number(taps[2]);
  IndexedKernelSpec spec;
  spec.key = key.view();
  spec.body = [&taps](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    const ir::DType storage = context.input_dtypes[0];
    const ir::DType compute = ir::compute_dtype(storage);
    WindowTaps window = load_window_taps(context, taps);
    ValueId sum = builder.constant(0, compute);
    for_each_window_tap(context, window, [&](ValueId ok, ValueId value) {
      // The CPU sums (and divides) in the tensor's own dtype: each step
      // rounds for the half types.
      sum = builder.select(ok, builder.cast(builder.binary(OpCode::kAdd, sum, value), storage), sum);
    });
    for (int k = 0; k < 3; ++k) {
      sum = builder.cast(builder.binary(OpCode::kDivide, sum, builder.cast(builder.load(2 + 2 * k), compute)),
                         storage);
    }
    builder.store(0, builder.cast(sum, context.output_dtypes[0]));
  };
  launch_window_forward("aten::_adaptive_avg_pool3d", spec, input, output,
                        window_tables(input, output.sizes(), taps), taps);
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
  const std::array<int64_t, 3> taps = {longest_window(self.size(rank - 3), grad_output.size(rank - 3)),
                                       longest_window(self.size(rank - 2), grad_output.size(rank - 2)),
                                       longest_window(self.size(rank - 1), grad_output.size(rank - 1))};
  if (too_large(taps)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::_adaptive_avg_pool3d_backward>::call(
        grad_output, self);
  }
  at::Tensor grad_input = at::zeros_like(self, at::MemoryFormat::Contiguous);
  if (grad_output.numel() == 0) return grad_input;
  at::Tensor gradient = batched_5d(grad_output), target = batched_5d(grad_input);
  IndexedKernelSpec spec;
  spec.key = "adaptive_avg_pool3d_backward";
  spec.single_threaded = true;
  spec.logical_order = true;
  spec.body = [](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    const ir::DType storage = context.output_dtypes[0];
    const ir::DType compute = ir::compute_dtype(storage);
    WindowTap tap = load_window_tap(context);
    // grad_output / kd / kh / kw, each step rounded to the tensor's dtype.
    ValueId delta = builder.load(0);
    for (int k = 0; k < 3; ++k) {
      delta = builder.cast(builder.binary(OpCode::kDivide, delta, builder.cast(builder.load(2 + 2 * k), compute)),
                           storage);
    }
    scatter_add_at_tap(context, tap, delta);
  };
  launch_window_backward("aten::_adaptive_avg_pool3d_backward", spec, gradient, target,
                         window_tables(target, gradient.sizes(), taps), taps);
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
