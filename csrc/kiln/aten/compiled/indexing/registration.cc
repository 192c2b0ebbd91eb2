// The indexing family's registration table: gathers, scatters, advanced
// indexing, masked ops and the shape ops that copy (cat, flip, roll, ...).
#include <torch/library.h>

#include "kiln/aten/compiled/indexing/indexing_ops.h"
#include "kiln/aten/compiled/indexing/scatter_ops.h"
#include "kiln/aten/compiled/indexing/shape_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cat", TORCH_FN(compiled::cat));
  m.impl("cat.out", TORCH_FN(compiled::cat_out));
  m.impl("flip", TORCH_FN(compiled::flip));
  m.impl("roll", TORCH_FN(compiled::roll));

  m.impl("index_select", TORCH_FN(compiled::index_select));
  m.impl("index_select.out", TORCH_FN(compiled::index_select_out));
  m.impl("gather", TORCH_FN(compiled::gather));
  m.impl("gather.out", TORCH_FN(compiled::gather_out));
  m.impl("take", TORCH_FN(compiled::take));
  m.impl("take.out", TORCH_FN(compiled::take_out));
  m.impl("index.Tensor", TORCH_FN(compiled::index));
  m.impl("index.Tensor_out", TORCH_FN(compiled::index_out));
  m.impl("nonzero", TORCH_FN(compiled::nonzero));
  m.impl("nonzero.out", TORCH_FN(compiled::nonzero_out));
  m.impl("masked_select", TORCH_FN(compiled::masked_select));
  m.impl("masked_select.out", TORCH_FN(compiled::masked_select_out));

  m.impl("scatter.src_out", TORCH_FN(compiled::scatter_src_out));
  m.impl("scatter.value_out", TORCH_FN(compiled::scatter_value_out));
  m.impl("scatter.reduce_out", TORCH_FN(compiled::scatter_reduce_out));
  m.impl("scatter.value_reduce_out", TORCH_FN(compiled::scatter_value_reduce_out));
  m.impl("scatter_add.out", TORCH_FN(compiled::scatter_add_out));
  m.impl("scatter_reduce.two_out", TORCH_FN(compiled::scatter_reduce_two_out));
  m.impl("_index_put_impl_", TORCH_FN(compiled::index_put_impl_));
  m.impl("index_add.out", TORCH_FN(compiled::index_add_out));
  m.impl("index_copy.out", TORCH_FN(compiled::index_copy_out));
  m.impl("index_reduce.out", TORCH_FN(compiled::index_reduce_out));
  m.impl("index_fill_.int_Scalar", TORCH_FN(compiled::index_fill_));
  m.impl("index_fill_.int_Tensor", TORCH_FN(compiled::index_fill_tensor_));
  m.impl("embedding_dense_backward", TORCH_FN(compiled::embedding_dense_backward));
  m.impl("masked_scatter_", TORCH_FN(compiled::masked_scatter_));
  m.impl("put_", TORCH_FN(compiled::put_));
}

}  // namespace kiln::torch_integration
