// Pooling windows unrolled in blocks of taps, for the 2-D poolings
// (avg_pool2d.cc, adaptive_avg_pool2d.cc, max_pool2d.cc,
// adaptive_max_pool2d.cc): how a window is split into blocks (TapBlocks),
// the loop of launches that carry a partial result from one block to the
// next (launch_tap_blocks), and, inside a kernel body, the row-major visit of
// a block's taps (for_each_tap).
//
// Launches are pool_launch.h's: asynchronous, on the stream of the first
// output, in block order on that stream, so each launch reads the partial
// result the one before it wrote.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/aten/compiled/nn/pool/pool_launch.h"

namespace kiln::torch_integration::compiled {

// Windows are unrolled in blocks of at most kMaxTapsPerLaunch taps (rows x
// columns); a larger window takes several launches that carry their partial
// result in memory. Blocks are whole rows when a row fits, so taps are always
// visited in row-major order, as ATen's CPU kernels visit them.
constexpr int64_t kMaxTapsPerLaunch = 64;

struct TapBlocks {
  int64_t rows = 1, columns = 1;              // the whole window
  int64_t block_rows = 1, block_columns = 1;  // taps per launch
  bool single() const { return block_rows == rows && block_columns == columns; }
  // Block origins {row, column}, in visiting order.
  std::vector<std::pair<int64_t, int64_t>> origins() const;
};
TapBlocks plan_tap_blocks(int64_t rows, int64_t columns);

// One launch's block, as its kernel body sees it. Its size and its place in
// the visiting order are compile-time (part of the kernel's key); where it
// starts is a launch scalar, so one kernel serves every middle block.
struct TapBlock {
  int64_t rows = 1, columns = 1;  // taps in the block, unrolled
  bool fresh = true;  // the first launch: nothing carried in, the reduction starts
  bool last = true;   // the last launch: the results are written
  // The block's first tap {row, column} within the window, read from the
  // launch's last scalar. Bodies call it where they need it, which keeps the
  // kernel's instruction order (and so its disk-cache key) as before.
  std::pair<ir::ValueId, ir::ValueId> origin(PoolContext& context) const {
    return context.unpack(context.scalars.back());
  }
};

// The launches of one pooling over the blocks of its window.
struct TapBlockSpec {
  const char* op_name = nullptr;  // a string literal: op tracking keeps it
  // Names the body's semantics and compile-time parameters (as
  // PoolKernelSpec::key); the block's size and place are appended to it.
  std::string_view key;
  std::array<int64_t, 4> sizes{};  // the iteration space, per PoolAxis
  bool channels_innermost = false;
  // The pooled tensor: input 0 of every launch, read through plane_base.
  at::Tensor source;
  // The partial result between launches: written (outputs 0, ...) by every
  // launch but the last, read back (inputs 1, ...) by every launch but the
  // first. Unused, and may be undefined, when the window is one block.
  c10::SmallVector<at::Tensor, 2> carried;
  // What the last launch writes (outputs 0, ...); may be `carried` itself.
  c10::SmallVector<at::Tensor, 2> results;
  // The op's int64 launch scalars; the block's origin is appended to them.
  c10::SmallVector<int64_t, 8> scalars;
  // Builds one launch's kernel: stores every output.
  std::function<void(PoolContext&, const TapBlock&)> body;
};

// Launches spec.body once per block of `blocks`, in visiting order, each
// launch threaded over the positions (cost: the block's taps).
void launch_tap_blocks(const TapBlockSpec& spec, const TapBlocks& blocks);

// One axis of a block of taps: per tap, whether it counts (inside the window
// and the input) and its element offset within the plane.
struct TapAxis {
  std::vector<ir::ValueId> valid, offset;
};

// Calls visit(i, j, valid, offset) for each tap of rows x columns in
// row-major order, the CPU's: `valid` when both its row and its column count,
// `offset` their summed offset, or 0 when not valid, so that a masked indexed
// load stays inside the plane.
template <typename Visit>
void for_each_tap(PoolContext& context, const TapAxis& rows, const TapAxis& columns, Visit&& visit) {
  for (size_t i = 0; i < rows.valid.size(); ++i) {
    for (size_t j = 0; j < columns.valid.size(); ++j) {
      ir::ValueId valid = context.both(rows.valid[i], columns.valid[j]);
      ir::ValueId offset = context.or_zero(valid, context.add(rows.offset[i], columns.offset[j]));
      visit(i, j, valid, offset);
    }
  }
}

// The 2-D adaptive poolings (adaptive_avg_pool2d.cc, adaptive_max_pool2d.cc).
// Blocks of taps for the largest window of `in` pooled into `out`:
TapBlocks plan_adaptive_tap_blocks(const PoolPlanes& in, const PoolPlanes& out);
// The spec's fields every adaptive pooling sets the same way: op name, key,
// iteration space and layout, `input` as the source, and the scalars the body
// reads (0: input height and width, 1: output height and width, 2 and 3: the
// input's height and width strides).
void set_adaptive_spec(TapBlockSpec& spec, const char* op_name, std::string_view key,
                       const at::Tensor& input, const PoolPlanes& in, const PoolPlanes& out);

// Inside a body: the window of the current output position, and each tap of
// `block` within it (rows.valid, columns.valid: inside the window; offsets
// into the input plane; h and w: the tap's row and column).
struct AdaptiveTaps {
  ir::ValueId width;  // the input's
  ir::ValueId h_start, h_end, w_start, w_end;
  TapAxis rows, columns;
  std::vector<ir::ValueId> h, w;
};
AdaptiveTaps adaptive_taps(PoolContext& context, const TapBlock& block);

}  // namespace kiln::torch_integration::compiled
