// The pooling family's registration table: max, average and adaptive pooling
// in 2-D and 3-D, max unpooling, forward and backward, over batched and
// unbatched tensors of any strides (channels_last ones keep that layout, as on
// the CPU). Every call is asynchronous on the current stream.
//
// The 2-D poolings:
//
// Shapes, parameters and their errors are ATen's: the structured meta
// functions of max_pool2d_with_indices, avg_pool2d and their backwards, and
// the checks of ATen's CPU adaptive pooling. Dtypes are the CPU's: max pooling
// takes every integer and floating dtype but bool, its backward floating
// ones; average pooling floating and int64; adaptive pooling floating only.
//
// Semantics follow ATen's CPU kernels for contiguous tensors:
//  - max pooling: the first maximum of the window in row-major order, a NaN
//    wins (the last NaN); the index is h * W + w within the input plane;
//  - averages sum in float32 for half types (float64 for float64, int64 for
//    int64) and round once; adaptive pooling divides by the window height,
//    then by its width;
//  - backward of the averages adds each output's share, rounded to the
//    tensor's dtype, in the CPU's order (rows of outputs, then columns), so
//    half-precision results match the CPU's; max-pool backward adds the
//    gradient at each index, ignoring indices outside the input plane.
// Windows larger than kMaxTapsPerLaunch (tap_blocks.h) take several
// launches.
#include <torch/library.h>

#include "kiln/aten/compiled/nn/pool/adaptive_avg_pool2d.h"
#include "kiln/aten/compiled/nn/pool/adaptive_avg_pool3d.h"
#include "kiln/aten/compiled/nn/pool/adaptive_max_pool2d.h"
#include "kiln/aten/compiled/nn/pool/avg_pool2d.h"
#include "kiln/aten/compiled/nn/pool/avg_pool3d.h"
#include "kiln/aten/compiled/nn/pool/max_pool2d.h"
#include "kiln/aten/compiled/nn/pool/max_pool3d.h"
#include "kiln/aten/compiled/nn/pool/max_unpool.h"

namespace kiln::torch_integration {

// max_pool2d, adaptive_avg_pool2d and the 1-D poolings are
// CompositeImplicitAutograd in ATen: on a non-CPU device max_pool2d calls
// max_pool2d_with_indices, and adaptive_avg_pool2d takes a mean for a 1x1
// output, else calls _adaptive_avg_pool2d; autograd's formulas call the
// backward ops below. The structured ops register their functional and out=
// overloads; _adaptive_avg_pool2d's out= overloads are CompositeExplicit
// wrappers of the functional ones, while adaptive_avg_pool2d.out is a CPU
// kernel of its own in ATen, so it is registered here too.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool2d_with_indices", TORCH_FN(compiled::max_pool2d_with_indices));
  m.impl("max_pool2d_with_indices.out", TORCH_FN(compiled::max_pool2d_with_indices_out));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(compiled::max_pool2d_with_indices_backward));
  m.impl("max_pool2d_with_indices_backward.grad_input",
         TORCH_FN(compiled::max_pool2d_with_indices_backward_out));

  m.impl("avg_pool2d", TORCH_FN(compiled::avg_pool2d));
  m.impl("avg_pool2d.out", TORCH_FN(compiled::avg_pool2d_out));
  m.impl("avg_pool2d_backward", TORCH_FN(compiled::avg_pool2d_backward));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN(compiled::avg_pool2d_backward_out));

  m.impl("_adaptive_avg_pool2d", TORCH_FN(compiled::adaptive_avg_pool2d));
  m.impl("adaptive_avg_pool2d.out", TORCH_FN(compiled::adaptive_avg_pool2d_out));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(compiled::adaptive_avg_pool2d_backward));
}

// F.interpolate and F.pad reach these through CompositeImplicitAutograd ops
// (upsample_*.vec, pad, _pad_enum); autograd's formulas call the backward ops.
// Structured ops register their functional and out= overloads.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("adaptive_max_pool2d", TORCH_FN(compiled::adaptive_max_pool2d));
  m.impl("adaptive_max_pool2d.out", TORCH_FN(compiled::adaptive_max_pool2d_out));
  m.impl("adaptive_max_pool2d_backward", TORCH_FN(compiled::adaptive_max_pool2d_backward));
  m.impl("adaptive_max_pool2d_backward.grad_input", TORCH_FN(compiled::adaptive_max_pool2d_backward_out));
  m.impl("max_unpool2d", TORCH_FN(compiled::max_unpool2d));
  m.impl("max_unpool2d.out", TORCH_FN(compiled::max_unpool2d_out));
  m.impl("max_unpool3d", TORCH_FN(compiled::max_unpool3d));
  m.impl("max_unpool3d.out", TORCH_FN(compiled::max_unpool3d_out));
  m.impl("max_pool3d_with_indices", TORCH_FN(compiled::max_pool3d_with_indices));
  m.impl("max_pool3d_with_indices.out", TORCH_FN(compiled::max_pool3d_with_indices_out));
  m.impl("max_pool3d_with_indices_backward", TORCH_FN(compiled::max_pool3d_with_indices_backward));
  m.impl("max_pool3d_with_indices_backward.grad_input",
         TORCH_FN(compiled::max_pool3d_with_indices_backward_out));
  m.impl("adaptive_max_pool3d", TORCH_FN(compiled::adaptive_max_pool3d));
  m.impl("adaptive_max_pool3d.out", TORCH_FN(compiled::adaptive_max_pool3d_out));
  m.impl("adaptive_max_pool3d_backward", TORCH_FN(compiled::adaptive_max_pool3d_backward));
  m.impl("adaptive_max_pool3d_backward.grad_input", TORCH_FN(compiled::adaptive_max_pool3d_backward_out));
  m.impl("_adaptive_avg_pool3d", TORCH_FN(compiled::adaptive_avg_pool3d));
  m.impl("adaptive_avg_pool3d.out", TORCH_FN(compiled::adaptive_avg_pool3d_out));
  m.impl("_adaptive_avg_pool3d_backward", TORCH_FN(compiled::adaptive_avg_pool3d_backward));
  m.impl("adaptive_avg_pool3d_backward.grad_input", TORCH_FN(compiled::adaptive_avg_pool3d_backward_out));
  m.impl("avg_pool3d", TORCH_FN(compiled::avg_pool3d));
  m.impl("avg_pool3d.out", TORCH_FN(compiled::avg_pool3d_out));
  m.impl("avg_pool3d_backward", TORCH_FN(compiled::avg_pool3d_backward));
  m.impl("avg_pool3d_backward.grad_input", TORCH_FN(compiled::avg_pool3d_backward_out));
}

}  // namespace kiln::torch_integration
