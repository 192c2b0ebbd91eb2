// The sorting family's registration table: sort, topk and the other
// selections, searchsorted and bucketize, unique, histc, nonzero_static and
// repeat_interleave, all row kernels.
#include <torch/library.h>

#include "kiln/aten/compiled/sort/histogram_ops.h"
#include "kiln/aten/compiled/sort/nonzero_static_ops.h"
#include "kiln/aten/compiled/sort/repeat_interleave_ops.h"
#include "kiln/aten/compiled/sort/search_ops.h"
#include "kiln/aten/compiled/sort/selection_ops.h"
#include "kiln/aten/compiled/sort/sort_ops.h"
#include "kiln/aten/compiled/sort/unique_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sort.stable", TORCH_FN(compiled::sort_stable));
  m.impl("sort.values_stable", TORCH_FN(compiled::sort_stable_out));

  // Selection.
  m.impl("topk", TORCH_FN(compiled::topk));
  m.impl("topk.values", TORCH_FN(compiled::topk_out));
  m.impl("kthvalue.values", TORCH_FN(compiled::kthvalue_out));
  m.impl("median", TORCH_FN(compiled::median));
  m.impl("median.dim_values", TORCH_FN(compiled::median_dim_out));
  m.impl("nanmedian", TORCH_FN(compiled::nanmedian));
  m.impl("nanmedian.dim_values", TORCH_FN(compiled::nanmedian_dim_out));
  m.impl("mode", TORCH_FN(compiled::mode));
  m.impl("mode.values", TORCH_FN(compiled::mode_out));

  // Search.
  m.impl("searchsorted.Tensor", TORCH_FN(compiled::searchsorted));
  m.impl("searchsorted.Tensor_out", TORCH_FN(compiled::searchsorted_out));
  m.impl("searchsorted.Scalar", TORCH_FN(compiled::searchsorted_scalar));
  m.impl("searchsorted.Scalar_out", TORCH_FN(compiled::searchsorted_scalar_out));
  m.impl("bucketize.Tensor", TORCH_FN(compiled::bucketize));
  m.impl("bucketize.Tensor_out", TORCH_FN(compiled::bucketize_out));
  m.impl("bucketize.Scalar", TORCH_FN(compiled::bucketize_scalar));

  // Unique values and membership (their output sizes need a stream sync).
  m.impl("_unique2", TORCH_FN(compiled::unique2));
  m.impl("unique_consecutive", TORCH_FN(compiled::unique_consecutive));
  m.impl("isin.Tensor_Tensor", TORCH_FN(compiled::isin));
  m.impl("isin.Tensor_Tensor_out", TORCH_FN(compiled::isin_out));
  m.impl("isin.Tensor_Scalar", TORCH_FN(compiled::isin_tensor_scalar));
  m.impl("isin.Tensor_Scalar_out", TORCH_FN(compiled::isin_tensor_scalar_out));
  m.impl("isin.Scalar_Tensor", TORCH_FN(compiled::isin_scalar_tensor));
  m.impl("isin.Scalar_Tensor_out", TORCH_FN(compiled::isin_scalar_tensor_out));

  // Fixed-size nonzero (no stream sync).
  m.impl("nonzero_static", TORCH_FN(compiled::nonzero_static));
  m.impl("nonzero_static.out", TORCH_FN(compiled::nonzero_static_out));
  m.impl("repeat_interleave.Tensor", TORCH_FN(compiled::repeat_interleave));

  // Histograms.
  m.impl("histc", TORCH_FN(compiled::histc));
  m.impl("histc.out", TORCH_FN(compiled::histc_out));
  m.impl("bincount", TORCH_FN(compiled::bincount));
}

}  // namespace kiln::torch_integration
