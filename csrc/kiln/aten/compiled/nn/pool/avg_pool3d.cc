// avg_pool3d and its backward (registered in nn/pool/registration.cc).
//
// Output o along a dim covers inputs o * stride - pad + k (k < kernel) inside
// the input. The host lists them per output coordinate (element offsets, -1
// outside) and that window's share of ATen's divide factor: the window
// clipped to the padded input (count_include_pad) or to the input (an empty
// window counts 1: its sum is 0, as the CPU's output there). The forward sums
// the window in (d, h, w) order in float32, float64 or int64 (the CPU's
// dtypes; int64 divides with truncation as C does) and divides once by the
// product of the shares or divisor_override. The backward adds
// grad_output / factor at every tap, in grad_output's order, as the CPU.
// Tables, operands and tap visits: window_tables.h.
//
// Shapes and errors: ATen's structured meta functions.
#include <ATen/ops/avg_pool3d_backward_meta.h>
#include <ATen/ops/avg_pool3d_meta.h>
#include <ATen/ops/empty.h>

#include <array>

#include "kiln/aten/compiled/launch/indexed_kernel.h"
#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/compiled/launch/structured_run.h"
#include "kiln/aten/compiled/nn/pool/avg_pool3d.h"
#include "kiln/aten/compiled/nn/pool/window_tables.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

struct Window3d {
  std::array<int64_t, 3> kernel, stride, pad;
};

Window3d window_of(at::IntArrayRef kernel_size, at::IntArrayRef stride, at::IntArrayRef padding) {
  Window3d w{};
  for (int k = 0; k < 3; ++k) {
    w.kernel[k] = kernel_size.size() == 1 ? kernel_size[0] : kernel_size[k];
    w.stride[k] = stride.empty() ? w.kernel[k] : (stride.size() == 1 ? stride[0] : stride[k]);
    w.pad[k] = padding.size() == 1 ? padding[0] : padding[k];
  }
  return w;
}

// One dim's tables: offsets (output * kernel entries) and each output's share
// of the divide factor.
DimTables dim_tables(int64_t input, int64_t output, int64_t kernel, int64_t stride, int64_t pad,
                     int64_t element_stride, bool count_include_pad, const at::Device& device) {
  at::Tensor offsets = at::empty({output * kernel}, at::TensorOptions().dtype(at::kLong));
  at::Tensor shares = at::empty({output}, at::TensorOptions().dtype(at::kLong));
  int64_t* offset = offsets.data_ptr<int64_t>();
  int64_t* share = shares.data_ptr<int64_t>();
  for (int64_t o = 0; o < output; ++o) {
    const int64_t start = o * stride - pad;
    const int64_t end = std::min(start + kernel, input + pad);
    const int64_t clipped = std::min(end, input) - std::max<int64_t>(start, 0);
    share[o] = count_include_pad ? end - start : std::max<int64_t>(clipped, 1);
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t i = start + k;
      offset[o * kernel + k] = i >= 0 && i < std::min(end, input) ? i * element_stride : -1;
    }
  }
  return {offsets.to(device), shares.to(device)};
}

// The tables of the three dims of batched `input` pooled into `output` sizes.
std::array<DimTables, 3> window_tables(const at::Tensor& input, at::IntArrayRef output, const Window3d& w,
                                       bool count_include_pad) {
  std::array<DimTables, 3> tables;
  for (int k = 0; k < 3; ++k) {
    tables[k] = dim_tables(input.size(2 + k), output[2 + k], w.kernel[k], w.stride[k], w.pad[k],
                           input.stride(2 + k), count_include_pad, input.device());
  }
  return tables;
}

// The divide factor: divisor_override (scalar 0) when `has_override`, else
// the product of the three shares (inputs 2, 4, 6).
ValueId divide_factor(IndexedKernelContext& context, bool has_override) {
  ir::Builder& builder = context.builder;
  if (has_override) return context.scalars[0];
  return builder.binary(OpCode::kMultiply, builder.binary(OpCode::kMultiply, builder.load(2), builder.load(4)),
                        builder.load(6));
}

void check_dtype(const at::Tensor& tensor, const char* name) {
  const at::ScalarType type = tensor.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kLong, "\"",
                              name, "\" not implemented for '", c10::toString(type), "'");
}

void avg_pool3d_into(const at::Tensor& self, const Window3d& w, bool count_include_pad,
                     std::optional<int64_t> divisor_override, const at::Tensor& out) {
  check_dtype(self, "avg_pool3d_out_frame");
  if (out.numel() == 0) return;
  at::Tensor input = batched_5d(self), output = batched_5d(out);
  const bool has_override = divisor_override.has_value();
  const std::array<int64_t, 3>& taps = w.kernel;
  Signature key("avg_pool3d|");
  key.append_number(taps[0]).append('x').append_number(taps[1]).append('x').append_number(taps[2]);
  if (has_override) key.append("|override");
  IndexedKernelSpec spec;
  spec.key = key.view();
  spec.body = [&taps, has_override](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    const ir::DType compute = ir::compute_dtype(context.input_dtypes[0]);
    WindowTaps window = load_window_taps(context, taps);
    ValueId sum = builder.constant(0, compute);
    for_each_window_tap(context, window, [&](ValueId ok, ValueId value) {
      sum = builder.select(ok, builder.binary(OpCode::kAdd, sum, value), sum);
    });
    ValueId factor = divide_factor(context, has_override);
    builder.store(0, builder.cast(builder.binary(OpCode::kDivide, sum, builder.cast(factor, compute)),
                                  context.output_dtypes[0]));
  };
  std::vector<c10::Scalar> scalars;
  if (has_override) scalars.push_back(c10::Scalar(*divisor_override));
  launch_window_forward("aten::avg_pool3d", spec, input, output,
                        window_tables(input, output.sizes(), w, count_include_pad), taps, scalars);
}

void avg_pool3d_backward_into(const at::Tensor& grad_output, const at::Tensor& self, const Window3d& w,
                              bool count_include_pad, std::optional<int64_t> divisor_override,
                              const at::Tensor& grad_input) {
  const at::ScalarType type = grad_output.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble,
                              "\"avg_pool3d_backward_out_frame\" not implemented for '", c10::toString(type), "'");
  grad_input.zero_();
  if (grad_output.numel() == 0) return;
  at::Tensor gradient = batched_5d(grad_output), target = batched_5d(grad_input);
  const bool has_override = divisor_override.has_value();
  IndexedKernelSpec spec;
  spec.key = has_override ? "avg_pool3d_backward|override" : "avg_pool3d_backward";
  spec.single_threaded = true;
  spec.logical_order = true;
  spec.body = [has_override](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    const ir::DType compute = ir::compute_dtype(context.output_dtypes[0]);
    WindowTap tap = load_window_tap(context);
    ValueId delta = builder.binary(OpCode::kDivide, builder.load(0),
                                   builder.cast(divide_factor(context, has_override), compute));
    scatter_add_at_tap(context, tap, delta);
  };
  std::vector<c10::Scalar> scalars;
  if (has_override) scalars.push_back(c10::Scalar(*divisor_override));
  launch_window_backward("aten::avg_pool3d_backward", spec, gradient, target,
                         window_tables(target, gradient.sizes(), w, count_include_pad), w.kernel, scalars);
}

}  // namespace

at::Tensor avg_pool3d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override) {
  return structured<at::meta::structured_avg_pool3d>(nullptr, [&](const at::Tensor& result) {
    avg_pool3d_into(self, window_of(kernel_size, stride, padding), count_include_pad, divisor_override,
                    result);
  }, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

at::Tensor& avg_pool3d_out(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                           at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, at::Tensor& out) {
  structured<at::meta::structured_avg_pool3d>(&out, [&](const at::Tensor& result) {
    avg_pool3d_into(self, window_of(kernel_size, stride, padding), count_include_pad, divisor_override,
                    result);
  }, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  return out;
}

at::Tensor avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               at::IntArrayRef kernel_size, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  return structured<at::meta::structured_avg_pool3d_backward>(nullptr, [&](const at::Tensor& result) {
    avg_pool3d_backward_into(grad_output, self, window_of(kernel_size, stride, padding), count_include_pad,
                             divisor_override, result);
  }, grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

at::Tensor& avg_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                                    std::optional<int64_t> divisor_override, at::Tensor& grad_input) {
  structured<at::meta::structured_avg_pool3d_backward>(&grad_input, [&](const at::Tensor& result) {
    avg_pool3d_backward_into(grad_output, self, window_of(kernel_size, stride, padding), count_include_pad,
                             divisor_override, result);
  }, grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
