#include "kiln/aten/compiled/nn/pool/tap_blocks.h"

#include <algorithm>
#include <tuple>

#include "kiln/aten/compiled/launch/kernel_launch.h"

namespace kiln::torch_integration::compiled {

std::vector<std::pair<int64_t, int64_t>> TapBlocks::origins() const {
  std::vector<std::pair<int64_t, int64_t>> result;
  for (int64_t row = 0; row < rows; row += block_rows) {
    for (int64_t column = 0; column < columns; column += block_columns) {
      result.emplace_back(row, column);
    }
  }
  return result;
}

TapBlocks plan_tap_blocks(int64_t rows, int64_t columns) {
  TapBlocks blocks;
  blocks.rows = std::max<int64_t>(rows, 1);
  blocks.columns = std::max<int64_t>(columns, 1);
  if (blocks.rows * blocks.columns <= kMaxTapsPerLaunch) {
    blocks.block_rows = blocks.rows;
    blocks.block_columns = blocks.columns;
  } else if (blocks.columns <= kMaxTapsPerLaunch) {
    blocks.block_rows = kMaxTapsPerLaunch / blocks.columns;
    blocks.block_columns = blocks.columns;
  } else {
    blocks.block_rows = 1;
    blocks.block_columns = kMaxTapsPerLaunch;
  }
  return blocks;
}

void launch_tap_blocks(const TapBlockSpec& spec, const TapBlocks& blocks) {
  const auto origins = blocks.origins();
  for (size_t index = 0; index < origins.size(); ++index) {
    TapBlock block;
    block.rows = blocks.block_rows;
    block.columns = blocks.block_columns;
    block.fresh = index == 0;
    block.last = index + 1 == origins.size();
    // The body depends on the block's size and place: both name the kernel.
    Signature key(spec.key);
    key.append("|b").append_number(block.rows).append('x').append_number(block.columns);
    key.append(block.fresh ? "|fresh" : "|continue").append(block.last ? "|final" : "|partial");

    PoolKernelSpec launch;
    launch.op_name = spec.op_name;
    launch.key = key.view();
    launch.sizes = spec.sizes;
    launch.channels_innermost = spec.channels_innermost;
    launch.inputs.push_back(plane_base(spec.source));
    if (!block.fresh) {
      for (const at::Tensor& partial : spec.carried) launch.inputs.push_back(at_position(partial));
    }
    for (const at::Tensor& output : block.last ? spec.results : spec.carried) {
      launch.outputs.push_back(at_position(output));
    }
    launch.scalars = spec.scalars;
    launch.scalars.push_back(pack_pair(spec.op_name, origins[index].first, origins[index].second));
    launch.cost_per_position = block.rows * block.columns;
    launch.body = [&spec, block](PoolContext& context) { spec.body(context, block); };
    launch_pool_kernel(launch);
  }
}

TapBlocks plan_adaptive_tap_blocks(const PoolPlanes& in, const PoolPlanes& out) {
  return plan_tap_blocks(max_adaptive_window(out.height, in.height), max_adaptive_window(out.width, in.width));
}

void set_adaptive_spec(TapBlockSpec& spec, const char* op_name, std::string_view key,
                       const at::Tensor& input, const PoolPlanes& in, const PoolPlanes& out) {
  spec.op_name = op_name;
  spec.key = key;
  spec.sizes = {out.width, out.height, out.channels, out.batch};
  spec.channels_innermost = is_channels_last(input);
  spec.source = input;
  spec.scalars = {pack_pair(op_name, in.height, in.width), pack_pair(op_name, out.height, out.width),
                  in.height_stride, in.width_stride};
}

AdaptiveTaps adaptive_taps(PoolContext& context, const TapBlock& block) {
  AdaptiveTaps taps;
  auto [height, width] = context.unpack(context.scalars[0]);
  auto [out_h, out_w] = context.unpack(context.scalars[1]);
  auto [row0, column0] = block.origin(context);
  taps.width = width;
  std::tie(taps.h_start, taps.h_end) =
      adaptive_window(context, context.coordinate(PoolAxis::kHeight), out_h, height);
  std::tie(taps.w_start, taps.w_end) =
      adaptive_window(context, context.coordinate(PoolAxis::kWidth), out_w, width);
  for (int64_t i = 0; i < block.rows; ++i) {
    ir::ValueId h = context.add(taps.h_start, context.add(row0, context.int64(i)));
    taps.rows.valid.push_back(context.less(h, taps.h_end));
    taps.rows.offset.push_back(context.mul(h, context.scalars[2]));
    taps.h.push_back(h);
  }
  for (int64_t j = 0; j < block.columns; ++j) {
    ir::ValueId w = context.add(taps.w_start, context.add(column0, context.int64(j)));
    taps.columns.valid.push_back(context.less(w, taps.w_end));
    taps.columns.offset.push_back(context.mul(w, context.scalars[3]));
    taps.w.push_back(w);
  }
  return taps;
}

}  // namespace kiln::torch_integration::compiled
