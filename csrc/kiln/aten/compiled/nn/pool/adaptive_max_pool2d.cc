// adaptive_max_pool2d and its backward (adaptive_max_pool1d is composite
// over it), registered in nn/pool/registration.cc.
//
// Output o along a dim of input size n and output size m covers inputs
// [floor(o * n / m), ceil((o + 1) * n / m)). The forward unrolls the largest
// such window (blocks of taps, tap_blocks.h; later blocks continue the
// scan from the stored maximum and index) with a mask for shorter ones. The
// scan is the CPU's: it starts at -inf with the window's first element's
// index, and a tap replaces the maximum when greater or NaN; the index is
// h * W + w within the input plane. The backward is max pooling's: each
// gradient added at its index (max_pool2d.cc).
//
// Shapes and errors: ATen's structured meta functions. Dtypes: floating, as
// the CPU.
#include <ATen/ops/adaptive_max_pool2d_backward_meta.h>
#include <ATen/ops/adaptive_max_pool2d_meta.h>

#include <limits>
#include <vector>

#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/compiled/launch/structured_outputs.h"
#include "kiln/aten/compiled/launch/structured_run.h"
#include "kiln/aten/compiled/nn/pool/adaptive_max_pool2d.h"
#include "kiln/aten/compiled/nn/pool/max_pool2d.h"
#include "kiln/aten/compiled/nn/pool/pool_launch.h"
#include "kiln/aten/compiled/nn/pool/tap_blocks.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

void adaptive_max_pool2d_into(const at::Tensor& input, const at::Tensor& output,
                              const at::Tensor& indices) {
  constexpr const char* kOpName = "aten::adaptive_max_pool2d";
  check_pool_dtype(input, PoolDtypes::kFloating, "adaptive_max_pool2d",
                   "adaptive_max_pool2d_channels_last");
  if (output.numel() == 0) return;
  PoolPlanes in = pool_planes(input);
  PoolPlanes out = pool_planes(output);
  const TapBlocks blocks = plan_adaptive_tap_blocks(in, out);
  Signature key("adaptive_max_pool2d|w");
  key.append_number(blocks.rows).append('x').append_number(blocks.columns);
  TapBlockSpec spec;
  set_adaptive_spec(spec, kOpName, key.view(), input, in, out);
  // The running maximum and its index are the results themselves.
  spec.carried = {output, indices};
  spec.results = {output, indices};
  spec.body = [&](PoolContext& context, const TapBlock& block) {
    ir::Builder& builder = context.builder;
    const AdaptiveTaps taps = adaptive_taps(context, block);
    const ir::DType compute = ir::compute_dtype(context.input_dtypes[0]);
    ValueId best = block.fresh ? builder.constant(-std::numeric_limits<double>::infinity(), compute)
                               : builder.load(1);
    ValueId best_index =
        block.fresh ? context.add(context.mul(taps.h_start, taps.width), taps.w_start) : builder.load(2);
    std::vector<ValueId> row_index;  // each tap row's share of the plane index: h * W
    for (ValueId h : taps.h) row_index.push_back(context.mul(h, taps.width));
    for_each_tap(context, taps.rows, taps.columns, [&](size_t i, size_t j, ValueId valid, ValueId offset) {
      ValueId value = builder.indexed_load(0, offset);
      ValueId better = builder.binary(OpCode::kLogicalOr, builder.binary(OpCode::kGreater, value, best),
                                      builder.unary(OpCode::kIsNan, value));
      better = context.both(valid, better);
      best = builder.select(better, value, best);
      best_index = builder.select(better, context.add(row_index[i], taps.w[j]), best_index);
    });
    builder.store(0, best);
    builder.store(1, best_index);
  };
  launch_tap_blocks(spec, blocks);
}

void adaptive_max_pool2d_backward_into(const at::Tensor& grad_output, const at::Tensor& indices,
                                       const at::Tensor& grad_input) {
  check_pool_dtype(grad_output, PoolDtypes::kFloating, "adaptive_max_pool2d_backward",
                   "adaptive_max_pool2d_backward_channels_last");
  max_pool2d_backward_into(grad_output, indices, grad_input);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> adaptive_max_pool2d(const at::Tensor& self,
                                                       at::IntArrayRef output_size) {
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_adaptive_max_pool2d, 2> meta;
  meta.meta(self, output_size);
  adaptive_max_pool2d_into(self, meta.output(0), meta.output(1));
  return {meta.output(0), meta.output(1)};
}

std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool2d_out(const at::Tensor& self,
                                                             at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices) {
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_adaptive_max_pool2d, 2> meta({out, indices});
  meta.meta(self, output_size);
  adaptive_max_pool2d_into(self, out, indices);
  return {out, indices};
}

at::Tensor adaptive_max_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& indices) {
  using Meta = at::meta::structured_adaptive_max_pool2d_backward;
  return structured<Meta>(nullptr, [&](const at::Tensor& result) {
    adaptive_max_pool2d_backward_into(grad_output, indices, result);
  }, grad_output, self, indices);
}

at::Tensor& adaptive_max_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input) {
  structured<at::meta::structured_adaptive_max_pool2d_backward>(&grad_input, [&](const at::Tensor& result) {
    adaptive_max_pool2d_backward_into(grad_output, indices, result);
  }, grad_output, self, indices);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
