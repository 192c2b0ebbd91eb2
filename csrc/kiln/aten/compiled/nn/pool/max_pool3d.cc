// 3-D max pooling with indices (max_pool3d_with_indices) and adaptive 3-D max
// pooling, forward and backward (registered in nn/pool/registration.cc).
//
// A window along each dim depends only on the output coordinate along it, so
// the host lists each dim's taps per output coordinate (the valid ones first,
// in order, then -1 up to the longest window): an element offset and the
// tap's share of the plane index (d * H * W, h * W or w). The kernel unrolls
// the longest window (at most kMaxTaps taps; larger windows take the CPU's
// kernel) and scans as the CPU does: from the lowest value with the window's
// first element's index, a tap replacing the maximum when greater or NaN. The
// backward adds each gradient at its index, in grad_output's order
// (plane_scatter, max_unpool.cc).
//
// Shapes and errors: ATen's pool3d_shape_check and argument checks for
// max_pool3d, the structured meta functions for adaptive pooling. Dtypes:
// max_pool3d every real dtype but bool, adaptive and backward floating.
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Pool.h>
#include <ATen/ops/adaptive_max_pool3d_backward_meta.h>
#include <ATen/ops/adaptive_max_pool3d_meta.h>
#include <ATen/ops/adaptive_max_pool3d_ops.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_pool3d_with_indices_ops.h>

#include <functional>
#include <limits>
#include <vector>

#include "kiln/aten/compiled/launch/indexed_kernel.h"
#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/compiled/nn/pool/max_pool3d.h"
#include "kiln/aten/compiled/nn/pool/max_unpool.h"
#include "kiln/aten/compiled/launch/structured_outputs.h"
#include "kiln/aten/compiled/launch/structured_run.h"
#include "kiln/aten/cpu_fallback.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

constexpr int64_t kMaxTaps = 216;

// One dim's windows: taps[o] lists the input coordinates of output o's window.
struct WindowDim {
  std::vector<std::vector<int64_t>> taps;
  int64_t longest() const {
    size_t longest = 1;
    for (const auto& list : taps) longest = std::max(longest, list.size());
    return static_cast<int64_t>(longest);
  }
};

WindowDim strided_windows(int64_t input, int64_t output, int64_t kernel, int64_t stride,
                          int64_t pad, int64_t dilation) {
  WindowDim dim;
  for (int64_t o = 0; o < output; ++o) {
    std::vector<int64_t> list;
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t i = o * stride - pad + k * dilation;
      if (i >= 0 && i < input) list.push_back(i);
    }
    dim.taps.push_back(std::move(list));
  }
  return dim;
}

WindowDim adaptive_windows(int64_t input, int64_t output) {
  WindowDim dim;
  for (int64_t o = 0; o < output; ++o) {
    std::vector<int64_t> list;
    const int64_t start = (o * input) / output;
    const int64_t end = ((o + 1) * input + output - 1) / output;
    for (int64_t i = start; i < end; ++i) list.push_back(i);
    dim.taps.push_back(std::move(list));
  }
  return dim;
}

// (offset table, index-share table) of one dim, as device tensors.
std::pair<at::Tensor, at::Tensor> dim_tables(const WindowDim& dim, int64_t taps, int64_t stride,
                                             int64_t index_scale, const at::Device& device) {
  const int64_t outputs = static_cast<int64_t>(dim.taps.size());
  at::Tensor offsets = at::empty({outputs * taps}, at::TensorOptions().dtype(at::kLong));
  at::Tensor shares = at::empty({outputs * taps}, at::TensorOptions().dtype(at::kLong));
  int64_t* offset = offsets.data_ptr<int64_t>();
  int64_t* share = shares.data_ptr<int64_t>();
  for (int64_t o = 0; o < outputs; ++o) {
    for (int64_t t = 0; t < taps; ++t) {
      const bool valid = t < static_cast<int64_t>(dim.taps[o].size());
      offset[o * taps + t] = valid ? dim.taps[o][t] * stride : -1;
      share[o * taps + t] = valid ? dim.taps[o][t] * index_scale : 0;
    }
  }
  return {offsets.to(device), shares.to(device)};
}

ValueId lowest(ir::Builder& builder, ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kUInt8: return builder.constant(0, dtype);
    case ir::DType::kInt8: return builder.constant(std::numeric_limits<int8_t>::min(), dtype);
    case ir::DType::kInt16: return builder.constant(std::numeric_limits<int16_t>::min(), dtype);
    case ir::DType::kInt32: return builder.constant(std::numeric_limits<int32_t>::min(), dtype);
    case ir::DType::kInt64:
      // INT64_MIN as -2^62 * 2 (it does not survive a double constant).
      return builder.binary(OpCode::kMultiply, builder.constant(-4611686018427387904.0, dtype),
                            builder.constant(2, dtype));
    default: return builder.constant(-std::numeric_limits<double>::infinity(), dtype);
  }
}

// Launches the scan over `windows` (depth, height, width) of batched 5-D
// `input` into batched `output` and `indices`.
void max_scan(const char* op_name, const at::Tensor& input, const std::vector<WindowDim>& windows,
              const at::Tensor& output, const at::Tensor& indices) {
  if (output.numel() == 0) return;
  const int64_t rank = 5;
  std::vector<int64_t> taps;
  for (const WindowDim& dim : windows) taps.push_back(dim.longest());
  const int64_t height = input.size(3), width = input.size(4);
  const int64_t scales[3] = {height * width, width, 1};
  std::vector<KernelOperand> inputs{
      operand_with_strides(input, {input.stride(0), input.stride(1), 0, 0, 0})};
  for (int k = 0; k < 3; ++k) {
    auto [offsets, shares] = dim_tables(windows[k], taps[k], input.stride(2 + k), scales[k], output.device());
    c10::DimVector strides(rank, 0);
    strides[2 + k] = taps[k];
    inputs.push_back(operand_with_strides(offsets, strides));
    inputs.push_back(operand_with_strides(shares, strides));
  }
  Signature key("max_pool3d_scan|");
  key.append_number(taps[0]).append('x').append_number(taps[1]).append('x').append_number(taps[2]);
  IndexedKernelSpec spec;
  spec.key = key.view();
  spec.body = [&taps](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    const ir::DType compute = ir::compute_dtype(context.input_dtypes[0]);
    auto i64 = [&](int64_t value) { return builder.constant(static_cast<double>(value), ir::DType::kInt64); };
    std::vector<std::vector<ValueId>> offset(3), share(3), valid(3);
    for (int k = 0; k < 3; ++k) {
      for (int64_t t = 0; t < taps[k]; ++t) {
        ValueId entry = builder.indexed_load(1 + 2 * k, i64(t));
        offset[k].push_back(entry);
        share[k].push_back(builder.indexed_load(2 + 2 * k, i64(t)));
        valid[k].push_back(builder.binary(OpCode::kLessEqual, i64(0), entry));
      }
    }
    ValueId best = lowest(builder, compute);
    ValueId best_index = builder.binary(OpCode::kAdd, share[0][0],
                                        builder.binary(OpCode::kAdd, share[1][0], share[2][0]));
    for (int64_t d = 0; d < taps[0]; ++d) {
      for (int64_t h = 0; h < taps[1]; ++h) {
        ValueId dh_valid = builder.binary(OpCode::kLogicalAnd, valid[0][d], valid[1][h]);
        ValueId dh_offset = builder.binary(OpCode::kAdd, offset[0][d], offset[1][h]);
        ValueId dh_index = builder.binary(OpCode::kAdd, share[0][d], share[1][h]);
        for (int64_t w = 0; w < taps[2]; ++w) {
          ValueId ok = builder.binary(OpCode::kLogicalAnd, dh_valid, valid[2][w]);
          ValueId at = builder.select(ok, builder.binary(OpCode::kAdd, dh_offset, offset[2][w]), i64(0));
          ValueId value = builder.indexed_load(0, at);
          ValueId better = builder.binary(OpCode::kGreater, value, best);
          if (ir::is_floating(compute)) {
            better = builder.binary(OpCode::kLogicalOr, better, builder.unary(OpCode::kIsNan, value));
          }
          better = builder.binary(OpCode::kLogicalAnd, ok, better);
          best = builder.select(better, value, best);
          best_index = builder.select(better, builder.binary(OpCode::kAdd, dh_index, share[2][w]), best_index);
        }
      }
    }
    builder.store(0, builder.cast(best, context.output_dtypes[0]));
    builder.store(1, best_index);
  };
  launch_indexed_kernel(op_name, spec, output.sizes(), inputs, {operand_of(output), operand_of(indices)});
}

int64_t tap_count(const std::vector<WindowDim>& windows) {
  int64_t count = 1;
  for (const WindowDim& dim : windows) count *= dim.longest();
  return count;
}

at::Tensor batched(const at::Tensor& tensor) { return tensor.dim() == 5 ? tensor : tensor.unsqueeze(0); }

void check_floating(const at::Tensor& tensor, const char* name) {
  const at::ScalarType type = tensor.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(type), "\"", name, "\" not implemented for '",
                              c10::toString(type), "'");
}

struct Pool3dArguments {
  int64_t kernel[3], stride[3], pad[3], dilation[3], output[3];
};

// max_pool3d's argument parsing and checks, as the CPU's.
Pool3dArguments max_pool3d_arguments(const at::Tensor& input, at::IntArrayRef kernel_size,
                                     at::IntArrayRef stride, at::IntArrayRef padding,
                                     at::IntArrayRef dilation, bool ceil_mode, const char* fn_name) {
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 3,
              "max_pool3d: kernel_size must either be a single int, or a tuple of three ints")
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints")
  TORCH_CHECK(padding.size() == 1 || padding.size() == 3,
              "max_pool3d: padding must either be a single int, or a tuple of three ints");
  TORCH_CHECK(dilation.size() == 1 || dilation.size() == 3,
              "max_pool3d: dilation must be either a single int, or a tuple of three ints");
  TORCH_CHECK(input.dim() == 4 || input.dim() == 5,
              "non-empty 4D or 5D (batch mode) tensor expected for input");
  Pool3dArguments a{};
  for (int k = 0; k < 3; ++k) {
    a.kernel[k] = kernel_size.size() == 1 ? kernel_size[0] : kernel_size[k];
    a.stride[k] = stride.empty() ? a.kernel[k] : (stride.size() == 1 ? stride[0] : stride[k]);
    a.pad[k] = padding.size() == 1 ? padding[0] : padding[k];
    a.dilation[k] = dilation.size() == 1 ? dilation[0] : dilation[k];
    const int64_t size = input.size(input.dim() - 3 + k);
    a.output[k] = at::native::pooling_output_shape<int64_t>(size, a.kernel[k], a.pad[k], a.stride[k],
                                                            a.dilation[k], ceil_mode);
  }
  const int64_t rank = input.dim();
  at::native::pool3d_shape_check(input, input.size(rank - 4), a.kernel[0], a.kernel[1], a.kernel[2],
                                 a.stride[0], a.stride[1], a.stride[2], a.pad[0], a.pad[1], a.pad[2],
                                 a.dilation[0], a.dilation[1], a.dilation[2], input.size(rank - 3),
                                 input.size(rank - 2), input.size(rank - 1), a.output[0], a.output[1],
                                 a.output[2], fn_name);
  return a;
}

std::vector<WindowDim> max_pool3d_windows(const at::Tensor& input, const Pool3dArguments& a) {
  std::vector<WindowDim> windows;
  for (int k = 0; k < 3; ++k) {
    windows.push_back(strided_windows(input.size(input.dim() - 3 + k), a.output[k], a.kernel[k],
                                      a.stride[k], a.pad[k], a.dilation[k]));
  }
  return windows;
}

std::vector<int64_t> pooled_sizes(const at::Tensor& input, const int64_t* output) {
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end() - 3);
  sizes.insert(sizes.end(), output, output + 3);
  return sizes;
}

}  // namespace

std::tuple<at::Tensor&, at::Tensor&> max_pool3d_with_indices_out(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, at::Tensor& out,
    at::Tensor& indices) {
  const Pool3dArguments a = max_pool3d_arguments(self, kernel_size, stride, padding, dilation,
                                                 ceil_mode, "max_pool3d_with_indices_out_cpu_template()");
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool, "\"max_pool3d\" not implemented for 'Bool'");
  const std::vector<WindowDim> windows = max_pool3d_windows(self, a);
  if (tap_count(windows) > kMaxTaps) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::max_pool3d_with_indices_out>::call(
        self, kernel_size, stride, padding, dilation, ceil_mode, out, indices);
  }
  const auto format = self.dim() == 5 ? self.suggest_memory_format() : at::MemoryFormat::Contiguous;
  out.resize_(pooled_sizes(self, a.output), format);
  indices.resize_(pooled_sizes(self, a.output), format);
  max_scan("aten::max_pool3d_with_indices", batched(self), windows, batched(out), batched(indices));
  return {out, indices};
}

std::tuple<at::Tensor, at::Tensor> max_pool3d_with_indices(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  at::Tensor out = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  max_pool3d_with_indices_out(self, kernel_size, stride, padding, dilation, ceil_mode, out, indices);
  return {out, indices};
}

at::Tensor& max_pool3d_with_indices_backward_out(
    const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
    const at::Tensor& indices, at::Tensor& grad_input) {
  const Pool3dArguments a = max_pool3d_arguments(self, kernel_size, stride, padding, dilation,
                                                 ceil_mode, "max_pool3d_with_indices_backward_out_cpu_template()");
  const int64_t rank = self.dim();
  at::native::max_pool3d_backward_shape_check(
      self, grad_output, indices, self.size(rank - 4), a.kernel[0], a.kernel[1], a.kernel[2],
      a.stride[0], a.stride[1], a.stride[2], a.pad[0], a.pad[1], a.pad[2], a.dilation[0],
      a.dilation[1], a.dilation[2], self.size(rank - 3), self.size(rank - 2), self.size(rank - 1),
      a.output[0], a.output[1], a.output[2], "max_pool3d_with_indices_backward_out_cpu_template()");
  check_floating(grad_output, "max_pool3d_backward");
  grad_input.resize_(self.sizes(), rank == 5 ? self.suggest_memory_format() : at::MemoryFormat::Contiguous);
  grad_input.zero_();
  plane_scatter("aten::max_pool3d_with_indices_backward", grad_output, indices,
                self.sizes().slice(rank - 3), grad_input, /*accumulate=*/true);
  return grad_input;
}

at::Tensor max_pool3d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, const at::Tensor& indices) {
  at::Tensor grad_input = at::empty({0}, grad_output.options());
  return max_pool3d_with_indices_backward_out(grad_output, self, kernel_size, stride, padding,
                                              dilation, ceil_mode, indices, grad_input);
}

std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool3d_out(const at::Tensor& self,
                                                             at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices) {
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_adaptive_max_pool3d, 2> meta({out, indices});
  meta.meta(self, output_size);
  check_floating(self, "adaptive_max_pool3d_cpu");
  std::vector<WindowDim> windows;
  for (int k = 0; k < 3; ++k) windows.push_back(adaptive_windows(self.size(self.dim() - 3 + k), output_size[k]));
  if (tap_count(windows) > kMaxTaps) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::adaptive_max_pool3d_out>::call(
        self, output_size, out, indices);
    return {out, indices};
  }
  max_scan("aten::adaptive_max_pool3d", batched(self), windows, batched(out), batched(indices));
  return {out, indices};
}

std::tuple<at::Tensor, at::Tensor> adaptive_max_pool3d(const at::Tensor& self,
                                                       at::IntArrayRef output_size) {
  at::Tensor out = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  adaptive_max_pool3d_out(self, output_size, out, indices);
  return {out, indices};
}

at::Tensor& adaptive_max_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input) {
  structured<at::meta::structured_adaptive_max_pool3d_backward>(&grad_input, [&](const at::Tensor& result) {
    check_floating(grad_output, "adaptive_max_pool3d_backward");
    result.zero_();
    plane_scatter("aten::adaptive_max_pool3d_backward", grad_output, indices,
                  self.sizes().slice(self.dim() - 3), result, /*accumulate=*/true);
  }, grad_output, self, indices);
  return grad_input;
}

at::Tensor adaptive_max_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& indices) {
  at::Tensor grad_input = at::empty({0}, grad_output.options());
  return adaptive_max_pool3d_backward_out(grad_output, self, indices, grad_input);
}

}  // namespace kiln::torch_integration::compiled
