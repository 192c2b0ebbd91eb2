// max_pool2d_with_indices and its backward.
//
// Forward: one position per output element; the window is unrolled (blocks of
// taps, tap_blocks.h) and each tap is an indexed load from the input
// plane, masked to offset 0 outside the input. The scan is ATen's CPU one:
// the running maximum starts at the dtype's lowest value and the index at the
// first tap at or past the top-left edge (so an all-lowest window reports its
// first element), and a tap replaces it when greater or NaN.
//
// Backward: grad_input is zeroed, then each grad_output element is added at
// its index with an accumulating indexed store, on one thread in position
// order: the order in which ATen's CPU kernel adds, so half-precision sums
// round alike.
#include <ATen/ops/max_pool2d_with_indices_backward_meta.h>
#include <ATen/ops/max_pool2d_with_indices_meta.h>

#include <limits>
#include <vector>

#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/compiled/launch/structured_outputs.h"
#include "kiln/aten/compiled/launch/structured_run.h"
#include "kiln/aten/compiled/nn/pool/max_pool2d.h"
#include "kiln/aten/compiled/nn/pool/pool_launch.h"
#include "kiln/aten/compiled/nn/pool/tap_blocks.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

// The lowest value of compute dtype `dtype`: where the CPU's scan starts.
ValueId lowest(PoolContext& context, ir::DType dtype) {
  ir::Builder& builder = context.builder;
  switch (dtype) {
    case ir::DType::kUInt8: return builder.constant(0, dtype);
    case ir::DType::kInt8: return builder.constant(std::numeric_limits<int8_t>::min(), dtype);
    case ir::DType::kInt16: return builder.constant(std::numeric_limits<int16_t>::min(), dtype);
    case ir::DType::kInt32: return builder.constant(std::numeric_limits<int32_t>::min(), dtype);
    case ir::DType::kInt64:
      // INT64_MIN as -2^62 * 2: neither it nor INT64_MAX survives the trip
      // through a double constant and a C literal.
      return context.mul(builder.constant(-4611686018427387904.0, dtype), builder.constant(2, dtype));
    default: return builder.constant(-std::numeric_limits<double>::infinity(), dtype);
  }
}

// The first of start, start + step, ... that is >= 0, for step > 0: where the
// CPU's window scan starts along one dim.
ValueId first_nonnegative(PoolContext& context, ValueId start, ValueId step) {
  ValueId zero = context.int64(0);
  ValueId steps = context.ceil_div(context.sub(zero, start), step);
  return context.builder.select(context.less(start, zero), context.add(start, context.mul(steps, step)),
                                start);
}

// The same from the coordinates of a whole window's taps: the first that is
// >= 0. The last tap always is (ATen limits padding to half the dilated
// window), so no division is needed.
ValueId first_nonnegative(PoolContext& context, const std::vector<ValueId>& taps) {
  ValueId first = taps.back();
  for (size_t k = taps.size() - 1; k-- > 0;) {
    first = context.builder.select(context.less_equal(context.int64(0), taps[k]), taps[k], first);
  }
  return first;
}

// One dim of a window block: per tap, whether it lies in the input, its
// element offset and its coordinate.
struct WindowAxis : TapAxis {
  std::vector<ValueId> coordinate;
};

// Taps origin + i (i < block) of a window starting at `start` with `dilation`,
// in an input of `size` elements of `stride`, of a window of `taps` taps.
WindowAxis window_axis(PoolContext& context, ValueId start, ValueId origin, ValueId dilation,
                       ValueId size, ValueId stride, int64_t block, int64_t taps) {
  WindowAxis axis;
  ValueId zero = context.int64(0);
  for (int64_t i = 0; i < block; ++i) {
    ValueId tap = context.add(origin, context.int64(i));
    ValueId coordinate = context.add(start, context.mul(tap, dilation));
    ValueId inside = context.both(context.less_equal(zero, coordinate), context.less(coordinate, size));
    axis.valid.push_back(context.both(context.less(tap, context.int64(taps)), inside));
    axis.offset.push_back(context.mul(coordinate, stride));
    axis.coordinate.push_back(coordinate);
  }
  return axis;
}

// Launches of the forward over `blocks`; the first starts the scan, later
// ones continue it from `output` and `indices`.
void max_pool2d_into(const at::Tensor& input, const Pool2dParameters& p, const at::Tensor& output,
                     const at::Tensor& indices) {
  constexpr const char* kOpName = "aten::max_pool2d_with_indices";
  check_pool_dtype(input, PoolDtypes::kFloatingAndInts, "max_pool2d", "max_pool2d_channels_last");
  if (output.numel() == 0) return;
  PoolPlanes in = pool_planes(input);
  PoolPlanes out = pool_planes(output);
  const TapBlocks blocks = plan_tap_blocks(p.kernel_h, p.kernel_w);
  Signature key("max_pool2d|k");
  key.append_number(p.kernel_h).append('x').append_number(p.kernel_w);
  TapBlockSpec spec;
  spec.op_name = kOpName;
  spec.key = key.view();
  spec.sizes = {out.width, out.height, out.channels, out.batch};
  spec.channels_innermost = is_channels_last(input);
  spec.source = input;
  // The running maximum and its index are the results themselves.
  spec.carried = {output, indices};
  spec.results = {output, indices};
  spec.scalars = {pack_pair(kOpName, p.stride_h, p.stride_w),
                  pack_pair(kOpName, p.pad_h, p.pad_w),
                  pack_pair(kOpName, p.dilation_h, p.dilation_w),
                  pack_pair(kOpName, in.height, in.width),
                  in.height_stride,
                  in.width_stride};
  spec.body = [&](PoolContext& context, const TapBlock& block) {
    ir::Builder& builder = context.builder;
    auto [stride_h, stride_w] = context.unpack(context.scalars[0]);
    auto [pad_h, pad_w] = context.unpack(context.scalars[1]);
    auto [dilation_h, dilation_w] = context.unpack(context.scalars[2]);
    auto [height, width] = context.unpack(context.scalars[3]);
    auto [row0, column0] = block.origin(context);
    ValueId h_start = context.sub(context.mul(context.coordinate(PoolAxis::kHeight), stride_h), pad_h);
    ValueId w_start = context.sub(context.mul(context.coordinate(PoolAxis::kWidth), stride_w), pad_w);
    const ir::DType compute = ir::compute_dtype(context.input_dtypes[0]);
    WindowAxis rows = window_axis(context, h_start, row0, dilation_h, height, context.scalars[4],
                                  block.rows, p.kernel_h);
    WindowAxis columns = window_axis(context, w_start, column0, dilation_w, width, context.scalars[5],
                                     block.columns, p.kernel_w);
    ValueId best, best_index;
    if (block.fresh) {
      best = lowest(context, compute);
      ValueId first_h = block.rows == p.kernel_h ? first_nonnegative(context, rows.coordinate)
                                                 : first_nonnegative(context, h_start, dilation_h);
      ValueId first_w = block.columns == p.kernel_w ? first_nonnegative(context, columns.coordinate)
                                                    : first_nonnegative(context, w_start, dilation_w);
      best_index = context.add(context.mul(first_h, width), first_w);
    } else {
      best = builder.load(1);
      best_index = builder.load(2);
    }
    std::vector<ValueId> row_index;  // h * W: a row's share of the plane index
    for (ValueId h : rows.coordinate) row_index.push_back(context.mul(h, width));
    for_each_tap(context, rows, columns, [&](size_t i, size_t j, ValueId valid, ValueId offset) {
      ValueId value = builder.indexed_load(0, offset);
      ValueId better = builder.binary(OpCode::kGreater, value, best);
      if (ir::is_floating(compute)) {
        better = builder.binary(OpCode::kLogicalOr, better, builder.unary(OpCode::kIsNan, value));
      }
      better = context.both(valid, better);
      best = builder.select(better, value, best);
      best_index = builder.select(better, context.add(row_index[i], columns.coordinate[j]), best_index);
    });
    builder.store(0, best);
    builder.store(1, best_index);
  };
  launch_tap_blocks(spec, blocks);
}

}  // namespace

// Shared with adaptive max pooling (adaptive_max_pool2d.cc): the same
// indices into each input plane.
void max_pool2d_backward_into(const at::Tensor& grad_output, const at::Tensor& indices,
                              const at::Tensor& grad_input) {
  constexpr const char* kOpName = "aten::max_pool2d_with_indices_backward";
  check_pool_dtype(grad_output, PoolDtypes::kFloating, "max_pool2d_backward",
                   "max_pool2d_backward_channels_last");
  TORCH_CHECK(indices.scalar_type() == at::kLong, kOpName,
              ": expected indices of dtype Long, got ", indices.scalar_type());
  TORCH_CHECK(indices.device() == grad_output.device(), kOpName,
              ": expected indices on ", grad_output.device(), ", got ", indices.device());
  grad_input.zero_();
  if (grad_output.numel() == 0) return;
  PoolPlanes in = pool_planes(grad_input);
  PoolPlanes out = pool_planes(grad_output);
  PoolKernelSpec spec;
  spec.op_name = kOpName;
  // A plane with row-major contiguous rows is addressed by the index itself;
  // any other layout splits it into (h, w) first.
  const bool dense_plane = in.width_stride == 1 && in.height_stride == in.width;
  spec.key = dense_plane ? "max_pool2d_backward_dense" : "max_pool2d_backward";
  spec.sizes = {out.width, out.height, out.channels, out.batch};
  spec.channels_innermost = is_channels_last(grad_output);
  spec.inputs.push_back(at_position(grad_output));
  spec.inputs.push_back(at_position(indices));
  spec.outputs.push_back(plane_base(grad_input));
  spec.scalars = {pack_pair(kOpName, in.height, in.width), in.height_stride, in.width_stride};
  spec.single_threaded = true;
  // Indices point into their own plane: planes (or, channels innermost, whole
  // batch entries) scatter independently.
  spec.independent_block = out.height * out.width * (spec.channels_innermost ? out.channels : 1);
  spec.body = [dense_plane](PoolContext& context) {
    ir::Builder& builder = context.builder;
    auto [height, width] = context.unpack(context.scalars[0]);
    ValueId index = builder.load(1);
    ValueId valid = context.both(context.less_equal(context.int64(0), index),
                                 context.less(index, context.mul(height, width)));
    index = context.or_zero(valid, index);
    if (dense_plane) {
      builder.store_indexed(0, context.or_zero(valid, builder.load(0)), index, /*accumulate=*/true);
      return;
    }
    ValueId h = context.floor_div(index, width);
    ValueId w = context.sub(index, context.mul(h, width));
    ValueId offset = context.or_zero(
        valid, context.add(context.mul(h, context.scalars[1]), context.mul(w, context.scalars[2])));
    builder.store_indexed(0, context.or_zero(valid, builder.load(0)), offset, /*accumulate=*/true);
  };
  launch_pool_kernel(spec);
}


std::tuple<at::Tensor&, at::Tensor&> max_pool2d_with_indices_out(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, at::Tensor& out,
    at::Tensor& indices) {
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_max_pool2d_with_indices, 2> meta({out, indices});
  meta.meta(self, kernel_size, stride, padding, dilation, ceil_mode);
  max_pool2d_into(self, pool2d_parameters(kernel_size, stride, padding, dilation), out, indices);
  return {out, indices};
}

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(
    const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_max_pool2d_with_indices, 2> meta;
  meta.meta(self, kernel_size, stride, padding, dilation, ceil_mode);
  max_pool2d_into(self, pool2d_parameters(kernel_size, stride, padding, dilation), meta.output(0),
                  meta.output(1));
  return {meta.output(0), meta.output(1)};
}

at::Tensor& max_pool2d_with_indices_backward_out(const at::Tensor& grad_output,
                                                 const at::Tensor& self,
                                                 at::IntArrayRef kernel_size,
                                                 at::IntArrayRef stride, at::IntArrayRef padding,
                                                 at::IntArrayRef dilation, bool ceil_mode,
                                                 const at::Tensor& indices,
                                                 at::Tensor& grad_input) {
  using Meta = at::meta::structured_max_pool2d_with_indices_backward;
  structured<Meta>(&grad_input, [&](const at::Tensor& result) {
    max_pool2d_backward_into(grad_output, indices, result);
  }, grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices);
  return grad_input;
}

at::Tensor max_pool2d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, const at::Tensor& indices) {
  using Meta = at::meta::structured_max_pool2d_with_indices_backward;
  return structured<Meta>(nullptr, [&](const at::Tensor& result) {
    max_pool2d_backward_into(grad_output, indices, result);
  }, grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices);
}

}  // namespace kiln::torch_integration::compiled
