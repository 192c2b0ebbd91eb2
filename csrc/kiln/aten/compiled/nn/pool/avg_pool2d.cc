// avg_pool2d and its backward.
//
// Forward: one position per output element; the unrolled window sums the taps
// inside the input (padding adds nothing) in the accumulate dtype, then
// divides by ATen's divide factor: divisor_override, else the window clipped
// to the padded input (count_include_pad) or to the input. A window with no
// input tap is 0. Windows of several launches carry the sum in a buffer of
// the accumulate dtype.
//
// Backward: a gather, one position per grad_input element: the outputs whose
// window covers (h, w) are oh in [ceil((h + pad - k + 1) / stride),
// (h + pad) / stride], at most ceil(k / stride) per dim, unrolled. Each adds
// grad_output / divide_factor rounded to the tensor's dtype, in the order the
// CPU kernel adds them (outputs row-major), into a sum kept in the tensor's
// dtype, as the CPU's `grad_input[i] += delta` keeps it. No zero fill, no
// indexed stores: every position is independent and threads split them.
#include <ATen/ops/avg_pool2d_backward_meta.h>
#include <ATen/ops/avg_pool2d_meta.h>
#include <ATen/ops/empty.h>

#include <string_view>
#include <vector>

#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/compiled/launch/structured_run.h"
#include "kiln/aten/compiled/nn/pool/avg_pool2d.h"
#include "kiln/aten/compiled/nn/pool/pool_launch.h"
#include "kiln/aten/compiled/nn/pool/tap_blocks.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

// What ATen's CPU kernels sum in: float32 for the half types.
at::ScalarType accumulate_type(at::ScalarType type) {
  if (type == at::kDouble || type == at::kLong) return type;
  return at::kFloat;
}

std::string_view divisor_key(bool count_include_pad, std::optional<int64_t> divisor_override) {
  if (divisor_override.has_value()) return "|override";
  return count_include_pad ? "|with_pad" : "|without_pad";
}

// One dim of an average-pooling window starting at `start` (output o at
// o * stride - pad), in an input of `size` with `pad`: ATen's pool size (the
// window clipped to the padded input) and the count of its input taps.
struct WindowExtent {
  ValueId pool_size, input_count, empty;
};

WindowExtent window_extent(PoolContext& context, ValueId start, int64_t kernel, ValueId size,
                           ValueId pad) {
  ValueId end = context.min(context.add(start, context.int64(kernel)), context.add(size, pad));
  ValueId low = context.max(start, context.int64(0));
  ValueId high = context.min(end, size);
  return {context.sub(end, start), context.sub(high, low), context.less_equal(high, low)};
}

// ATen's divide factor of a window from its two dims.
ValueId divide_factor(PoolContext& context, const WindowExtent& rows, const WindowExtent& columns,
                      bool count_include_pad, bool has_override, ValueId divisor_override) {
  if (has_override) return divisor_override;
  if (count_include_pad) return context.mul(rows.pool_size, columns.pool_size);
  return context.mul(rows.input_count, columns.input_count);
}

// value / divisor in `value`'s dtype; an integer division by 0 gives 0 (a
// kernel cannot raise; ATen's meta function rejects a zero divisor_override).
ValueId divide(PoolContext& context, ValueId value, ValueId divisor) {
  ir::Builder& builder = context.builder;
  ir::DType dtype = builder.dtype_of(value);
  if (ir::is_integer(dtype)) {
    ValueId zero = context.int64(0);
    ValueId is_zero = builder.binary(OpCode::kEqual, divisor, zero);
    ValueId safe = builder.select(is_zero, context.int64(1), divisor);
    return builder.select(is_zero, zero, builder.binary(OpCode::kDivide, value, safe));
  }
  return builder.binary(OpCode::kDivide, value, builder.cast(divisor, dtype));
}

// Taps origin + i (i < block) of a window starting at `start`, of `kernel`
// taps, in an input of `size` elements of `stride`.
TapAxis tap_axis(PoolContext& context, ValueId start, ValueId origin, int64_t block, int64_t kernel,
                 ValueId size, ValueId stride) {
  TapAxis axis;
  for (int64_t i = 0; i < block; ++i) {
    ValueId tap = context.add(origin, context.int64(i));
    ValueId coordinate = context.add(start, tap);
    ValueId inside = context.both(context.less_equal(context.int64(0), coordinate),
                                  context.less(coordinate, size));
    axis.valid.push_back(context.both(context.less(tap, context.int64(kernel)), inside));
    axis.offset.push_back(context.mul(coordinate, stride));
  }
  return axis;
}

void avg_pool2d_into(const at::Tensor& input, const Pool2dParameters& p, bool count_include_pad,
                     std::optional<int64_t> divisor_override, const at::Tensor& output) {
  constexpr const char* kOpName = "aten::avg_pool2d";
  check_pool_dtype(input, PoolDtypes::kFloatingAndLong, "avg_pool2d", "avg_pool2d_channels_last");
  if (output.numel() == 0) return;
  PoolPlanes in = pool_planes(input);
  PoolPlanes out = pool_planes(output);
  const TapBlocks blocks = plan_tap_blocks(p.kernel_h, p.kernel_w);
  Signature key("avg_pool2d|k");
  key.append_number(p.kernel_h).append('x').append_number(p.kernel_w);
  key.append(divisor_key(count_include_pad, divisor_override));
  TapBlockSpec spec;
  spec.op_name = kOpName;
  spec.key = key.view();
  spec.sizes = {out.width, out.height, out.channels, out.batch};
  spec.channels_innermost = is_channels_last(input);
  spec.source = input;
  // Partial sums between the launches of a large window.
  if (!blocks.single()) {
    spec.carried.push_back(at::empty(output.sizes(),
                                     output.options()
                                         .dtype(accumulate_type(output.scalar_type()))
                                         .memory_format(output.suggest_memory_format())));
  }
  spec.results.push_back(output);
  spec.scalars = {pack_pair(kOpName, p.stride_h, p.stride_w),
                  pack_pair(kOpName, p.pad_h, p.pad_w),
                  pack_pair(kOpName, in.height, in.width),
                  in.height_stride,
                  in.width_stride,
                  divisor_override.value_or(0)};
  spec.body = [&](PoolContext& context, const TapBlock& block) {
    ir::Builder& builder = context.builder;
    auto [stride_h, stride_w] = context.unpack(context.scalars[0]);
    auto [pad_h, pad_w] = context.unpack(context.scalars[1]);
    auto [height, width] = context.unpack(context.scalars[2]);
    auto [row0, column0] = block.origin(context);
    ValueId h_start = context.sub(context.mul(context.coordinate(PoolAxis::kHeight), stride_h), pad_h);
    ValueId w_start = context.sub(context.mul(context.coordinate(PoolAxis::kWidth), stride_w), pad_w);
    const ir::DType accumulate = ir::compute_dtype(context.input_dtypes[0]);
    ValueId sum = block.fresh ? builder.constant(0, accumulate) : builder.load(1);
    TapAxis rows = tap_axis(context, h_start, row0, block.rows, p.kernel_h, height, context.scalars[3]);
    TapAxis columns =
        tap_axis(context, w_start, column0, block.columns, p.kernel_w, width, context.scalars[4]);
    for_each_tap(context, rows, columns, [&](size_t, size_t, ValueId valid, ValueId offset) {
      sum = context.add(sum, context.or_zero(valid, builder.indexed_load(0, offset)));
    });
    if (!block.last) {
      builder.store(0, sum);
      return;
    }
    WindowExtent row_extent = window_extent(context, h_start, p.kernel_h, height, pad_h);
    WindowExtent column_extent = window_extent(context, w_start, p.kernel_w, width, pad_w);
    ValueId divisor = divide_factor(context, row_extent, column_extent, count_include_pad,
                                    divisor_override.has_value(), context.scalars[5]);
    ValueId empty = builder.binary(OpCode::kLogicalOr, row_extent.empty, column_extent.empty);
    builder.store(0, context.or_zero(builder.unary(OpCode::kLogicalNot, empty),
                                     divide(context, sum, divisor)));
  };
  launch_tap_blocks(spec, blocks);
}

void avg_pool2d_backward_into(const at::Tensor& grad_output, const Pool2dParameters& p,
                              bool count_include_pad, std::optional<int64_t> divisor_override,
                              const at::Tensor& grad_input) {
  constexpr const char* kOpName = "aten::avg_pool2d_backward";
  check_pool_dtype(grad_output, PoolDtypes::kFloatingAndLong, "avg_pool2d_backward",
                   "avg_pool2d_backward_channels_last");
  if (grad_input.numel() == 0) return;
  PoolPlanes in = pool_planes(grad_input);
  PoolPlanes out = pool_planes(grad_output);
  // Outputs covering one input element, per dim.
  const int64_t candidates_h = (p.kernel_h - 1) / p.stride_h + 1;
  const int64_t candidates_w = (p.kernel_w - 1) / p.stride_w + 1;
  const TapBlocks blocks = plan_tap_blocks(candidates_h, candidates_w);
  Signature key("avg_pool2d_backward|k");
  key.append_number(p.kernel_h).append('x').append_number(p.kernel_w);
  key.append("|c").append_number(candidates_h).append('x').append_number(candidates_w);
  key.append(divisor_key(count_include_pad, divisor_override));
  TapBlockSpec spec;
  spec.op_name = kOpName;
  spec.key = key.view();
  spec.sizes = {in.width, in.height, in.channels, in.batch};
  spec.channels_innermost = is_channels_last(grad_input);
  spec.source = grad_output;
  // Each launch adds its candidates to the sum the one before stored.
  spec.carried.push_back(grad_input);
  spec.results.push_back(grad_input);
  spec.scalars = {pack_pair(kOpName, p.stride_h, p.stride_w),
                  pack_pair(kOpName, p.pad_h, p.pad_w),
                  pack_pair(kOpName, out.height, out.width),
                  pack_pair(kOpName, in.height, in.width),
                  out.height_stride,
                  out.width_stride,
                  divisor_override.value_or(0)};
  spec.body = [&](PoolContext& context, const TapBlock& block) {
    ir::Builder& builder = context.builder;
    auto [stride_h, stride_w] = context.unpack(context.scalars[0]);
    auto [pad_h, pad_w] = context.unpack(context.scalars[1]);
    auto [out_h, out_w] = context.unpack(context.scalars[2]);
    auto [height, width] = context.unpack(context.scalars[3]);
    auto [row0, column0] = block.origin(context);
    const ir::DType storage = context.output_dtypes[0];
    const ir::DType compute = ir::compute_dtype(storage);
    ValueId zero = context.int64(0);

    // The outputs along one dim whose windows cover input coordinate `x`,
    // each with its window's extent.
    struct Candidates {
      TapAxis taps;
      std::vector<WindowExtent> extents;
    };
    auto candidates = [&](ValueId x, int64_t kernel, ValueId stride, ValueId pad, ValueId outputs,
                          ValueId size, ValueId output_stride, ValueId origin, int64_t block_size,
                          int64_t count) {
      ValueId first = context.ceil_div(
          context.max(context.sub(context.add(x, pad), context.int64(kernel - 1)), zero), stride);
      Candidates result;
      for (int64_t i = 0; i < block_size; ++i) {
        ValueId index = context.add(origin, context.int64(i));
        ValueId o = context.add(first, index);
        ValueId start = context.sub(context.mul(o, stride), pad);
        result.taps.valid.push_back(
            context.both(context.less(index, context.int64(count)),
                         context.both(context.less_equal(start, x), context.less(o, outputs))));
        result.taps.offset.push_back(context.mul(o, output_stride));
        result.extents.push_back(window_extent(context, start, kernel, size, pad));
      }
      return result;
    };
    Candidates rows = candidates(context.coordinate(PoolAxis::kHeight), p.kernel_h, stride_h, pad_h,
                                 out_h, height, context.scalars[4], row0, block.rows, candidates_h);
    Candidates columns =
        candidates(context.coordinate(PoolAxis::kWidth), p.kernel_w, stride_w, pad_w, out_w, width,
                   context.scalars[5], column0, block.columns, candidates_w);
    ValueId sum = block.fresh ? builder.constant(0, compute) : builder.load(1);
    for_each_tap(context, rows.taps, columns.taps, [&](size_t i, size_t j, ValueId valid, ValueId offset) {
      ValueId divisor = divide_factor(context, rows.extents[i], columns.extents[j], count_include_pad,
                                      divisor_override.has_value(), context.scalars[6]);
      // As `scalar_t delta = grad / divide_factor`: for half types the
      // divisor becomes a half, and the quotient rounds to one.
      if (ir::is_floating(compute)) divisor = builder.cast(builder.cast(divisor, compute), storage);
      ValueId delta = builder.cast(divide(context, builder.indexed_load(0, offset), divisor), storage);
      sum = builder.select(valid, builder.cast(context.add(sum, delta), storage), sum);
    });
    builder.store(0, sum);
  };
  launch_tap_blocks(spec, blocks);
}

}  // namespace

at::Tensor& avg_pool2d_out(const at::Tensor& self, at::IntArrayRef kernel_size,
                           at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override,
                           at::Tensor& out) {
  structured<at::meta::structured_avg_pool2d>(&out, [&](const at::Tensor& result) {
    avg_pool2d_into(self, pool2d_parameters(kernel_size, stride, padding), count_include_pad,
                    divisor_override, result);
  }, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  return out;
}

at::Tensor avg_pool2d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override) {
  return structured<at::meta::structured_avg_pool2d>(nullptr, [&](const at::Tensor& result) {
    avg_pool2d_into(self, pool2d_parameters(kernel_size, stride, padding), count_include_pad,
                    divisor_override, result);
  }, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

at::Tensor& avg_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode,
                                    bool count_include_pad,
                                    std::optional<int64_t> divisor_override,
                                    at::Tensor& grad_input) {
  structured<at::meta::structured_avg_pool2d_backward>(&grad_input, [&](const at::Tensor& result) {
    avg_pool2d_backward_into(grad_output, pool2d_parameters(kernel_size, stride, padding),
                             count_include_pad, divisor_override, result);
  }, grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
            divisor_override);
  return grad_input;
}

at::Tensor avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                               at::IntArrayRef kernel_size, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  return structured<at::meta::structured_avg_pool2d_backward>(nullptr, [&](const at::Tensor& result) {
    avg_pool2d_backward_into(grad_output, pool2d_parameters(kernel_size, stride, padding),
                             count_include_pad, divisor_override, result);
  }, grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
            divisor_override);
}

}  // namespace kiln::torch_integration::compiled
