// avg_pool3d and its backward (registered in aten/compiled/nn/spatial/registration.cc).
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
//
// Shapes and errors: ATen's structured meta functions.
#include <ATen/ops/avg_pool3d_backward_meta.h>
#include <ATen/ops/avg_pool3d_meta.h>
#include <ATen/ops/empty.h>

#include <string>
#include <vector>

#include "kiln/aten/compiled/launch/indexed_kernel.h"
#include "kiln/aten/compiled/nn/pool/avg_pool3d.h"
#include "kiln/aten/compiled/launch/structured_outputs.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

struct Window3d {
  int64_t kernel[3], stride[3], pad[3];
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

// (offsets: output * kernel entries, shares: output entries) of one dim.
std::pair<at::Tensor, at::Tensor> dim_tables(int64_t input, int64_t output, int64_t kernel,
                                             int64_t stride, int64_t pad, int64_t element_stride,
                                             bool count_include_pad, const at::Device& device) {
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

void add_tables(std::vector<KernelOperand>& inputs, const at::Tensor& input, at::IntArrayRef output,
                const Window3d& w, bool count_include_pad, int64_t rank, bool tap_dims) {
  for (int k = 0; k < 3; ++k) {
    auto [offsets, shares] = dim_tables(input.size(2 + k), output[2 + k], w.kernel[k], w.stride[k],
                                        w.pad[k], input.stride(2 + k), count_include_pad, input.device());
    c10::DimVector offset_strides(rank, 0), share_strides(rank, 0);
    offset_strides[2 + k] = w.kernel[k];
    share_strides[2 + k] = 1;
    if (tap_dims) offset_strides[5 + k] = 1;
    inputs.push_back(operand_with_strides(offsets, offset_strides));
    inputs.push_back(operand_with_strides(shares, share_strides));
  }
}

// The divide factor: divisor_override (scalar 0) when `has_override`, else
// the product of the three shares (inputs 2, 4, 6).
ValueId divide_factor(IndexedKernelContext& context, bool has_override) {
  ir::Builder& builder = context.builder;
  if (has_override) return context.scalars[0];
  return builder.binary(OpCode::kMultiply, builder.binary(OpCode::kMultiply, builder.load(2), builder.load(4)),
                        builder.load(6));
}

at::Tensor batched(const at::Tensor& tensor) { return tensor.dim() == 5 ? tensor : tensor.unsqueeze(0); }

void check_dtype(const at::Tensor& tensor, const char* name) {
  const at::ScalarType type = tensor.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kLong, "\"",
                              name, "\" not implemented for '", c10::toString(type), "'");
}

void avg_pool3d_into(const at::Tensor& self, const Window3d& w, bool count_include_pad,
                     std::optional<int64_t> divisor_override, const at::Tensor& out) {
  check_dtype(self, "avg_pool3d_out_frame");
  if (out.numel() == 0) return;
  at::Tensor input = batched(self), output = batched(out);
  std::vector<KernelOperand> inputs{operand_with_strides(input, {input.stride(0), input.stride(1), 0, 0, 0})};
  add_tables(inputs, input, output.sizes(), w, count_include_pad, 5, /*tap_dims=*/false);
  const bool has_override = divisor_override.has_value();
  const std::vector<int64_t> taps{w.kernel[0], w.kernel[1], w.kernel[2]};
  const std::string key = "avg_pool3d|" + std::to_string(taps[0]) + "x" + std::to_string(taps[1]) + "x" +
                          std::to_string(taps[2]) + (has_override ? "|override" : "");
  IndexedKernelSpec spec;
  spec.key = key;
  spec.body = [&taps, has_override](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    const ir::DType compute = ir::compute_dtype(context.input_dtypes[0]);
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
        for (int64_t x = 0; x < taps[2]; ++x) {
          ValueId ok = builder.binary(OpCode::kLogicalAnd, builder.binary(OpCode::kLogicalAnd, valid[0][d], valid[1][h]),
                                      valid[2][x]);
          ValueId at = builder.select(ok, builder.binary(OpCode::kAdd, builder.binary(OpCode::kAdd, offset[0][d], offset[1][h]),
                                                         offset[2][x]), i64(0));
          sum = builder.select(ok, builder.binary(OpCode::kAdd, sum, builder.indexed_load(0, at)), sum);
        }
      }
    }
    ValueId factor = divide_factor(context, has_override);
    builder.store(0, builder.cast(builder.binary(OpCode::kDivide, sum, builder.cast(factor, compute)),
                                  context.output_dtypes[0]));
  };
  std::vector<c10::Scalar> scalars;
  if (has_override) scalars.push_back(c10::Scalar(*divisor_override));
  launch_indexed_kernel("aten::avg_pool3d", spec, output.sizes(), inputs, {operand_of(output)}, scalars);
}

void avg_pool3d_backward_into(const at::Tensor& grad_output, const at::Tensor& self, const Window3d& w,
                              bool count_include_pad, std::optional<int64_t> divisor_override,
                              const at::Tensor& grad_input) {
  const at::ScalarType type = grad_output.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble,
                              "\"avg_pool3d_backward_out_frame\" not implemented for '", c10::toString(type), "'");
  grad_input.zero_();
  if (grad_output.numel() == 0) return;
  at::Tensor gradient = batched(grad_output), target = batched(grad_input);
  c10::DimVector shape(gradient.sizes().begin(), gradient.sizes().end());
  for (int k = 0; k < 3; ++k) shape.push_back(w.kernel[k]);
  c10::DimVector gradient_strides(gradient.strides().begin(), gradient.strides().end());
  gradient_strides.resize(8, 0);
  std::vector<KernelOperand> inputs{operand_with_strides(gradient, gradient_strides)};
  add_tables(inputs, target, gradient.sizes(), w, count_include_pad, 8, /*tap_dims=*/true);
  const bool has_override = divisor_override.has_value();
  IndexedKernelSpec spec;
  spec.key = has_override ? "avg_pool3d_backward|override" : "avg_pool3d_backward";
  spec.single_threaded = true;
  spec.logical_order = true;
  spec.body = [has_override](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    const ir::DType compute = ir::compute_dtype(context.output_dtypes[0]);
    ValueId zero = builder.constant(0, ir::DType::kInt64);
    ValueId offset = zero, ok = -1;
    for (int k = 0; k < 3; ++k) {
      ValueId entry = builder.load(1 + 2 * k);
      ValueId inside = builder.binary(OpCode::kLessEqual, zero, entry);
      ok = k == 0 ? inside : builder.binary(OpCode::kLogicalAnd, ok, inside);
      offset = builder.binary(OpCode::kAdd, offset, entry);
    }
    ValueId delta = builder.binary(OpCode::kDivide, builder.load(0),
                                   builder.cast(divide_factor(context, has_override), compute));
    // Taps outside the input add zero at the plane's first element.
    builder.store_indexed(0, builder.select(ok, delta, builder.constant(0, compute)),
                          builder.select(ok, offset, zero), /*accumulate=*/true);
  };
  std::vector<c10::Scalar> scalars;
  if (has_override) scalars.push_back(c10::Scalar(*divisor_override));
  launch_indexed_kernel("aten::avg_pool3d_backward", spec, shape, inputs,
                        {operand_with_strides(target, {target.stride(0), target.stride(1), 0, 0, 0, 0, 0, 0})},
                        scalars);
}

}  // namespace

at::Tensor avg_pool3d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override) {
  StructuredOutputs<at::meta::structured_avg_pool3d> meta;
  meta.meta(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  avg_pool3d_into(self, window_of(kernel_size, stride, padding), count_include_pad, divisor_override,
                  meta.output());
  return meta.output();
}

at::Tensor& avg_pool3d_out(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                           at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, at::Tensor& out) {
  StructuredOutputs<at::meta::structured_avg_pool3d> meta({out});
  meta.meta(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  avg_pool3d_into(self, window_of(kernel_size, stride, padding), count_include_pad, divisor_override, out);
  return out;
}

at::Tensor avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               at::IntArrayRef kernel_size, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  StructuredOutputs<at::meta::structured_avg_pool3d_backward> meta;
  meta.meta(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  avg_pool3d_backward_into(grad_output, self, window_of(kernel_size, stride, padding), count_include_pad,
                           divisor_override, meta.output());
  return meta.output();
}

at::Tensor& avg_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                                    std::optional<int64_t> divisor_override, at::Tensor& grad_input) {
  StructuredOutputs<at::meta::structured_avg_pool3d_backward> meta({grad_input});
  meta.meta(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  avg_pool3d_backward_into(grad_output, self, window_of(kernel_size, stride, padding), count_include_pad,
                           divisor_override, grad_input);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
