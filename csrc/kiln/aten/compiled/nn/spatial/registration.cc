// The spatial family's registration table: upsampling, padding, im2col and
// col2im, channel_shuffle and grid_sampler_2d.
#include <torch/library.h>

#include "kiln/aten/compiled/nn/spatial/channel_shuffle_ops.h"
#include "kiln/aten/compiled/nn/spatial/grid_sampler_ops.h"
#include "kiln/aten/compiled/nn/spatial/im2col_ops.h"
#include "kiln/aten/compiled/nn/spatial/padding_ops.h"
#include "kiln/aten/compiled/nn/spatial/upsample_ops.h"

namespace kiln::torch_integration {

// F.interpolate and F.pad reach these through CompositeImplicitAutograd ops
// (upsample_*.vec, pad, _pad_enum); autograd's formulas call the backward ops.
// Structured ops register their functional and out= overloads.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("upsample_nearest1d", TORCH_FN(compiled::upsample_nearest1d));
  m.impl("upsample_nearest1d.out", TORCH_FN(compiled::upsample_nearest1d_out));
  m.impl("upsample_nearest1d_backward", TORCH_FN(compiled::upsample_nearest1d_backward));
  m.impl("upsample_nearest1d_backward.grad_input", TORCH_FN(compiled::upsample_nearest1d_backward_out));
  m.impl("upsample_nearest2d", TORCH_FN(compiled::upsample_nearest2d));
  m.impl("upsample_nearest2d.out", TORCH_FN(compiled::upsample_nearest2d_out));
  m.impl("upsample_nearest2d_backward", TORCH_FN(compiled::upsample_nearest2d_backward));
  m.impl("upsample_nearest2d_backward.grad_input", TORCH_FN(compiled::upsample_nearest2d_backward_out));
  m.impl("upsample_nearest3d", TORCH_FN(compiled::upsample_nearest3d));
  m.impl("upsample_nearest3d.out", TORCH_FN(compiled::upsample_nearest3d_out));
  m.impl("upsample_nearest3d_backward", TORCH_FN(compiled::upsample_nearest3d_backward));
  m.impl("upsample_nearest3d_backward.grad_input", TORCH_FN(compiled::upsample_nearest3d_backward_out));
  m.impl("_upsample_nearest_exact1d", TORCH_FN(compiled::_upsample_nearest_exact1d));
  m.impl("_upsample_nearest_exact1d.out", TORCH_FN(compiled::_upsample_nearest_exact1d_out));
  m.impl("_upsample_nearest_exact1d_backward", TORCH_FN(compiled::_upsample_nearest_exact1d_backward));
  m.impl("_upsample_nearest_exact1d_backward.grad_input", TORCH_FN(compiled::_upsample_nearest_exact1d_backward_out));
  m.impl("_upsample_nearest_exact2d", TORCH_FN(compiled::_upsample_nearest_exact2d));
  m.impl("_upsample_nearest_exact2d.out", TORCH_FN(compiled::_upsample_nearest_exact2d_out));
  m.impl("_upsample_nearest_exact2d_backward", TORCH_FN(compiled::_upsample_nearest_exact2d_backward));
  m.impl("_upsample_nearest_exact2d_backward.grad_input", TORCH_FN(compiled::_upsample_nearest_exact2d_backward_out));
  m.impl("_upsample_nearest_exact3d", TORCH_FN(compiled::_upsample_nearest_exact3d));
  m.impl("_upsample_nearest_exact3d.out", TORCH_FN(compiled::_upsample_nearest_exact3d_out));
  m.impl("_upsample_nearest_exact3d_backward", TORCH_FN(compiled::_upsample_nearest_exact3d_backward));
  m.impl("_upsample_nearest_exact3d_backward.grad_input", TORCH_FN(compiled::_upsample_nearest_exact3d_backward_out));
  m.impl("upsample_linear1d", TORCH_FN(compiled::upsample_linear1d));
  m.impl("upsample_linear1d.out", TORCH_FN(compiled::upsample_linear1d_out));
  m.impl("upsample_linear1d_backward", TORCH_FN(compiled::upsample_linear1d_backward));
  m.impl("upsample_linear1d_backward.grad_input", TORCH_FN(compiled::upsample_linear1d_backward_out));
  m.impl("upsample_bilinear2d", TORCH_FN(compiled::upsample_bilinear2d));
  m.impl("upsample_bilinear2d.out", TORCH_FN(compiled::upsample_bilinear2d_out));
  m.impl("upsample_bilinear2d_backward", TORCH_FN(compiled::upsample_bilinear2d_backward));
  m.impl("upsample_bilinear2d_backward.grad_input", TORCH_FN(compiled::upsample_bilinear2d_backward_out));
  m.impl("upsample_trilinear3d", TORCH_FN(compiled::upsample_trilinear3d));
  m.impl("upsample_trilinear3d.out", TORCH_FN(compiled::upsample_trilinear3d_out));
  m.impl("upsample_trilinear3d_backward", TORCH_FN(compiled::upsample_trilinear3d_backward));
  m.impl("upsample_trilinear3d_backward.grad_input", TORCH_FN(compiled::upsample_trilinear3d_backward_out));
  m.impl("upsample_bicubic2d", TORCH_FN(compiled::upsample_bicubic2d));
  m.impl("upsample_bicubic2d.out", TORCH_FN(compiled::upsample_bicubic2d_out));
  m.impl("upsample_bicubic2d_backward", TORCH_FN(compiled::upsample_bicubic2d_backward));
  m.impl("upsample_bicubic2d_backward.grad_input", TORCH_FN(compiled::upsample_bicubic2d_backward_out));
  m.impl("reflection_pad1d", TORCH_FN(compiled::reflection_pad1d));
  m.impl("reflection_pad1d.out", TORCH_FN(compiled::reflection_pad1d_out));
  m.impl("reflection_pad1d_backward", TORCH_FN(compiled::reflection_pad1d_backward));
  m.impl("reflection_pad1d_backward.grad_input", TORCH_FN(compiled::reflection_pad1d_backward_out));
  m.impl("reflection_pad2d", TORCH_FN(compiled::reflection_pad2d));
  m.impl("reflection_pad2d.out", TORCH_FN(compiled::reflection_pad2d_out));
  m.impl("reflection_pad2d_backward", TORCH_FN(compiled::reflection_pad2d_backward));
  m.impl("reflection_pad2d_backward.grad_input", TORCH_FN(compiled::reflection_pad2d_backward_out));
  m.impl("reflection_pad3d", TORCH_FN(compiled::reflection_pad3d));
  m.impl("reflection_pad3d.out", TORCH_FN(compiled::reflection_pad3d_out));
  m.impl("reflection_pad3d_backward", TORCH_FN(compiled::reflection_pad3d_backward));
  m.impl("reflection_pad3d_backward.grad_input", TORCH_FN(compiled::reflection_pad3d_backward_out));
  m.impl("replication_pad1d", TORCH_FN(compiled::replication_pad1d));
  m.impl("replication_pad1d.out", TORCH_FN(compiled::replication_pad1d_out));
  m.impl("replication_pad1d_backward", TORCH_FN(compiled::replication_pad1d_backward));
  m.impl("replication_pad1d_backward.grad_input", TORCH_FN(compiled::replication_pad1d_backward_out));
  m.impl("replication_pad2d", TORCH_FN(compiled::replication_pad2d));
  m.impl("replication_pad2d.out", TORCH_FN(compiled::replication_pad2d_out));
  m.impl("replication_pad2d_backward", TORCH_FN(compiled::replication_pad2d_backward));
  m.impl("replication_pad2d_backward.grad_input", TORCH_FN(compiled::replication_pad2d_backward_out));
  m.impl("replication_pad3d", TORCH_FN(compiled::replication_pad3d));
  m.impl("replication_pad3d.out", TORCH_FN(compiled::replication_pad3d_out));
  m.impl("replication_pad3d_backward", TORCH_FN(compiled::replication_pad3d_backward));
  m.impl("replication_pad3d_backward.grad_input", TORCH_FN(compiled::replication_pad3d_backward_out));
  m.impl("im2col", TORCH_FN(compiled::im2col));
  m.impl("im2col.out", TORCH_FN(compiled::im2col_out));
  m.impl("col2im", TORCH_FN(compiled::col2im));
  m.impl("col2im.out", TORCH_FN(compiled::col2im_out));
  m.impl("channel_shuffle", TORCH_FN(compiled::channel_shuffle));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", TORCH_FN(compiled::grid_sampler_2d));
  m.impl("grid_sampler_2d_backward", TORCH_FN(compiled::grid_sampler_2d_backward));
}

}  // namespace kiln::torch_integration
