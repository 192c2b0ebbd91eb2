// _adaptive_avg_pool2d (and adaptive_avg_pool2d.out) and its backward.
//
// Output o along a dim of input size n and output size m averages inputs
// [floor(o * n / m), ceil((o + 1) * n / m)). The forward unrolls the largest
// such window (computed on the host) with a mask for shorter ones and divides
// the sum by the window's height, then by its width, as ATen's CPU kernel.
//
// The backward is a gather: input i is covered by outputs
// [floor(i * m / n), ceil((i + 1) * m / n)) (the same formula with the sizes
// swapped), which it visits in the CPU's order, adding
// grad_output / height / width, each step rounded to the tensor's dtype as
// the CPU's scalar_t arithmetic rounds it.
#include <ATen/native/AdaptivePooling.h>
#include <ATen/ops/empty.h>

#include <vector>

#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/compiled/nn/pool/adaptive_avg_pool2d.h"
#include "kiln/aten/compiled/nn/pool/pool_launch.h"
#include "kiln/aten/compiled/nn/pool/tap_blocks.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

void check_input(const at::Tensor& input, at::IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  const int64_t rank = input.dim();
  TORCH_CHECK(rank == 3 || rank == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ",
              input.sizes());
  for (int64_t dim = rank - 2; dim < rank; ++dim) {
    TORCH_CHECK(input.size(dim) > 0,
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
                "dimensions, but input has sizes ",
                input.sizes(), " with dimension ", dim, " being empty");
  }
  TORCH_CHECK(output_size[0] >= 0 && output_size[1] >= 0,
              "adaptive_avg_pool2d(): elements of output_size must be non-negative, got ",
              output_size);
}

void resize_output(const at::Tensor& input, at::IntArrayRef output_size, const at::Tensor& output) {
  if (input.dim() == 3) {
    output.resize_({input.size(0), output_size[0], output_size[1]});
  } else {
    output.resize_({input.size(0), input.size(1), output_size[0], output_size[1]},
                   input.suggest_memory_format());
  }
}

void adaptive_avg_pool2d_into(const at::Tensor& input, const at::Tensor& output) {
  constexpr const char* kOpName = "aten::_adaptive_avg_pool2d";
  if (output.numel() == 0) return;
  check_pool_dtype(input, PoolDtypes::kFloating, "adaptive_avg_pool2d",
                   "adaptive_avg_pool2d_channels_last");
  PoolPlanes in = pool_planes(input);
  PoolPlanes out = pool_planes(output);
  const TapBlocks blocks = plan_adaptive_tap_blocks(in, out);
  Signature key("adaptive_avg_pool2d|w");
  key.append_number(blocks.rows).append('x').append_number(blocks.columns);
  TapBlockSpec spec;
  set_adaptive_spec(spec, kOpName, key.view(), input, in, out);
  // Partial sums between the launches of a large window.
  if (!blocks.single()) {
    spec.carried.push_back(
        at::empty(output.sizes(), output.options()
                                      .dtype(output.scalar_type() == at::kDouble ? at::kDouble : at::kFloat)
                                      .memory_format(output.suggest_memory_format())));
  }
  spec.results.push_back(output);
  spec.body = [&](PoolContext& context, const TapBlock& block) {
    ir::Builder& builder = context.builder;
    const AdaptiveTaps taps = adaptive_taps(context, block);
    const ir::DType accumulate = ir::compute_dtype(context.input_dtypes[0]);
    ValueId sum = block.fresh ? builder.constant(0, accumulate) : builder.load(1);
    for_each_tap(context, taps.rows, taps.columns, [&](size_t, size_t, ValueId valid, ValueId offset) {
      sum = context.add(sum, context.or_zero(valid, builder.indexed_load(0, offset)));
    });
    if (block.last) {
      sum = builder.binary(OpCode::kDivide, sum, builder.cast(context.sub(taps.h_end, taps.h_start), accumulate));
      sum = builder.binary(OpCode::kDivide, sum, builder.cast(context.sub(taps.w_end, taps.w_start), accumulate));
    }
    builder.store(0, sum);
  };
  launch_tap_blocks(spec, blocks);
}

}  // namespace

at::Tensor& adaptive_avg_pool2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                    at::Tensor& out) {
  check_input(self, output_size);
  TORCH_CHECK(self.dtype() == out.dtype(), "expected dtype ", self.dtype(),
              " for `output` but got dtype ", out.dtype());
  resize_output(self, output_size, out);
  adaptive_avg_pool2d_into(self, out);
  return out;
}

at::Tensor adaptive_avg_pool2d(const at::Tensor& self, at::IntArrayRef output_size) {
  at::Tensor output = at::empty({0}, self.options());
  check_input(self, output_size);
  resize_output(self, output_size, output);
  adaptive_avg_pool2d_into(self, output);
  return output;
}

at::Tensor adaptive_avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  constexpr const char* kOpName = "aten::_adaptive_avg_pool2d_backward";
  at::native::adaptive_pool_empty_output_check(grad_output, "adaptive_avg_pool2d_backward");
  const int64_t rank = grad_output.dim();
  TORCH_CHECK(self.dim() == rank, "adaptive_avg_pool2d_backward(): Expected dimensions ",
              self.dim(), " for `grad_output` but got dimensions ", rank);
  TORCH_CHECK(rank == 3 || rank == 4, "adaptive_avg_pool2d_backward(): Expected 3D or 4D tensor, but got ",
              self.sizes());
  TORCH_CHECK(self.dtype() == grad_output.dtype(), "adaptive_avg_pool2d_backward(): Expected dtype ",
              self.dtype(), " for `grad_output` but got dtype ", grad_output.dtype());
  // The CPU reads grad_output as (batch, channels) planes of self's: a
  // mismatch there is out-of-bounds memory on the CPU, an error here.
  for (int64_t dim = 0; dim < rank - 2; ++dim) {
    TORCH_CHECK(grad_output.size(dim) == self.size(dim), "adaptive_avg_pool2d_backward(): ",
                "expected grad_output of sizes [", self.sizes().slice(0, rank - 2), ", *, *], got ",
                grad_output.sizes());
  }
  at::Tensor grad_input = at::empty(self.sizes(), self.options().memory_format(self.suggest_memory_format()));
  check_pool_dtype(grad_output, PoolDtypes::kFloating, "adaptive_avg_pool2d_backward",
                   "adaptive_avg_pool2d_backward_channels_last");
  if (grad_input.numel() == 0) return grad_input;
  PoolPlanes in = pool_planes(grad_input);
  PoolPlanes out = pool_planes(grad_output);
  const TapBlocks blocks = plan_tap_blocks(max_adaptive_window(in.height, out.height),
                                           max_adaptive_window(in.width, out.width));
  Signature key("adaptive_avg_pool2d_backward|c");
  key.append_number(blocks.rows).append('x').append_number(blocks.columns);
  TapBlockSpec spec;
  spec.op_name = kOpName;
  spec.key = key.view();
  spec.sizes = {in.width, in.height, in.channels, in.batch};
  spec.channels_innermost = is_channels_last(grad_input);
  spec.source = grad_output;
  // Each launch adds its candidates to the sum the one before stored.
  spec.carried.push_back(grad_input);
  spec.results.push_back(grad_input);
  spec.scalars = {pack_pair(kOpName, in.height, in.width), pack_pair(kOpName, out.height, out.width),
                  out.height_stride, out.width_stride};
  spec.body = [&](PoolContext& context, const TapBlock& block) {
    ir::Builder& builder = context.builder;
    auto [height, width] = context.unpack(context.scalars[0]);
    auto [out_h, out_w] = context.unpack(context.scalars[1]);
    auto [row0, column0] = block.origin(context);
    const ir::DType storage = context.output_dtypes[0];
    const ir::DType compute = ir::compute_dtype(storage);
    // The outputs along one dim whose windows cover input coordinate `x`,
    // each with its window's size there.
    struct Candidates {
      TapAxis taps;
      std::vector<ValueId> sizes;
    };
    auto candidates = [&](ValueId x, ValueId outputs, ValueId inputs, ValueId output_stride,
                          ValueId origin, int64_t block_size) {
      auto [first, end] = adaptive_window(context, x, inputs, outputs);
      Candidates result;
      for (int64_t i = 0; i < block_size; ++i) {
        ValueId o = context.add(first, context.add(origin, context.int64(i)));
        auto [start, stop] = adaptive_window(context, o, outputs, inputs);
        // Divisors as `grad / kh` makes them: half-precision for half types.
        result.sizes.push_back(builder.cast(builder.cast(context.sub(stop, start), compute), storage));
        result.taps.valid.push_back(context.less(o, end));
        result.taps.offset.push_back(context.mul(o, output_stride));
      }
      return result;
    };
    Candidates rows = candidates(context.coordinate(PoolAxis::kHeight), out_h, height,
                                 context.scalars[2], row0, block.rows);
    Candidates columns = candidates(context.coordinate(PoolAxis::kWidth), out_w, width,
                                    context.scalars[3], column0, block.columns);
    ValueId sum = block.fresh ? builder.constant(0, compute) : builder.load(1);
    for_each_tap(context, rows.taps, columns.taps, [&](size_t i, size_t j, ValueId valid, ValueId offset) {
      ValueId delta = builder.indexed_load(0, offset);
      delta = builder.cast(builder.binary(OpCode::kDivide, delta, rows.sizes[i]), storage);
      delta = builder.cast(builder.binary(OpCode::kDivide, delta, columns.sizes[j]), storage);
      sum = builder.select(valid, builder.cast(context.add(sum, delta), storage), sum);
    });
    builder.store(0, sum);
  };
  launch_tap_blocks(spec, blocks);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
