// The reduction family's registration table: folding reductions, max/min and
// their indices, statistics and norms, scans (cumsum, cumprod, cummax,
// cummin, logcumsumexp) and hash_tensor.
#include <torch/library.h>

#include "kiln/aten/compiled/reduction/cumulative_ops.h"
#include "kiln/aten/compiled/reduction/hash_ops.h"
#include "kiln/aten/compiled/reduction/index_reduction_ops.h"
#include "kiln/aten/compiled/reduction/reduction_ops.h"
#include "kiln/aten/compiled/reduction/scan_ops.h"
#include "kiln/aten/compiled/reduction/statistics_ops.h"

namespace kiln::torch_integration {

// Structured ops register their functional and out= overloads (ATen's
// generated functional wrapper would otherwise allocate and redispatch to
// .out). Ops that are CompositeImplicitAutograd in ATen (var.dim, std(),
// nanmean, max.other, ...) are left to decompose into these, so autograd keeps
// working through them.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // Folding reductions.
  m.impl("sum.dim_IntList", TORCH_FN(compiled::sum));
  m.impl("sum.IntList_out", TORCH_FN(compiled::sum_out));
  m.impl("mean.dim", TORCH_FN(compiled::mean));
  m.impl("mean.out", TORCH_FN(compiled::mean_out));
  m.impl("prod", TORCH_FN(compiled::prod));
  m.impl("prod.dim_int", TORCH_FN(compiled::prod_dim));
  m.impl("prod.int_out", TORCH_FN(compiled::prod_dim_out));
  m.impl("nansum", TORCH_FN(compiled::nansum));
  m.impl("nansum.out", TORCH_FN(compiled::nansum_out));
  m.impl("count_nonzero.dim_IntList", TORCH_FN(compiled::count_nonzero));
  m.impl("amax", TORCH_FN(compiled::amax));
  m.impl("amax.out", TORCH_FN(compiled::amax_out));
  m.impl("amin", TORCH_FN(compiled::amin));
  m.impl("amin.out", TORCH_FN(compiled::amin_out));
  m.impl("any", TORCH_FN(compiled::any));
  m.impl("any.all_out", TORCH_FN(compiled::any_out));
  m.impl("any.dim", TORCH_FN(compiled::any_dim));
  m.impl("any.out", TORCH_FN(compiled::any_dim_out));
  m.impl("any.dims", TORCH_FN(compiled::any_dims));
  m.impl("any.dims_out", TORCH_FN(compiled::any_dims_out));
  m.impl("all", TORCH_FN(compiled::all));
  m.impl("all.all_out", TORCH_FN(compiled::all_out));
  m.impl("all.dim", TORCH_FN(compiled::all_dim));
  m.impl("all.out", TORCH_FN(compiled::all_dim_out));
  m.impl("all.dims", TORCH_FN(compiled::all_dims));
  m.impl("all.dims_out", TORCH_FN(compiled::all_dims_out));

  // Reductions that select an element.
  m.impl("max", TORCH_FN(compiled::max));
  m.impl("max.unary_out", TORCH_FN(compiled::max_unary_out));
  m.impl("max.dim", TORCH_FN(compiled::max_dim));
  m.impl("max.dim_max", TORCH_FN(compiled::max_dim_out));
  m.impl("min", TORCH_FN(compiled::min));
  m.impl("min.unary_out", TORCH_FN(compiled::min_unary_out));
  m.impl("min.dim", TORCH_FN(compiled::min_dim));
  m.impl("min.dim_min", TORCH_FN(compiled::min_dim_out));
  m.impl("argmax", TORCH_FN(compiled::argmax));
  m.impl("argmax.out", TORCH_FN(compiled::argmax_out));
  m.impl("argmin", TORCH_FN(compiled::argmin));
  m.impl("argmin.out", TORCH_FN(compiled::argmin_out));
  m.impl("aminmax", TORCH_FN(compiled::aminmax));
  m.impl("aminmax.out", TORCH_FN(compiled::aminmax_out));

  // Statistics.
  m.impl("var.correction", TORCH_FN(compiled::var));
  m.impl("var.correction_out", TORCH_FN(compiled::var_out));
  m.impl("std.correction", TORCH_FN(compiled::std_dev));
  m.impl("std.correction_out", TORCH_FN(compiled::std_dev_out));
  m.impl("var_mean.correction", TORCH_FN(compiled::var_mean));
  m.impl("std_mean.correction", TORCH_FN(compiled::std_mean));
  m.impl("linalg_vector_norm", TORCH_FN(compiled::linalg_vector_norm));
  m.impl("linalg_vector_norm.out", TORCH_FN(compiled::linalg_vector_norm_out));
  m.impl("norm.ScalarOpt_dim", TORCH_FN(compiled::norm));
  m.impl("norm.out", TORCH_FN(compiled::norm_out));
  m.impl("norm.ScalarOpt_dim_dtype", TORCH_FN(compiled::norm_dtype));
  m.impl("norm.dtype_out", TORCH_FN(compiled::norm_dtype_out));
  m.impl("logsumexp", TORCH_FN(compiled::logsumexp));
  m.impl("logsumexp.out", TORCH_FN(compiled::logsumexp_out));

  // Scans.
  m.impl("cumsum", TORCH_FN(compiled::cumsum));
  m.impl("cumsum.out", TORCH_FN(compiled::cumsum_out));
  m.impl("cumsum_", TORCH_FN(compiled::cumsum_));
  m.impl("cumprod", TORCH_FN(compiled::cumprod));
  m.impl("cumprod.out", TORCH_FN(compiled::cumprod_out));
  m.impl("cumprod_", TORCH_FN(compiled::cumprod_));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // Running scans (cummax/cummin are CompositeExplicitAutograd over these).
  m.impl("_cummax_helper", TORCH_FN(compiled::cummax_helper));
  m.impl("_cummin_helper", TORCH_FN(compiled::cummin_helper));
  m.impl("_logcumsumexp", TORCH_FN(compiled::logcumsumexp));
  m.impl("_logcumsumexp.out", TORCH_FN(compiled::logcumsumexp_out));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("hash_tensor", TORCH_FN(compiled::hash_tensor));
  m.impl("hash_tensor.out", TORCH_FN(compiled::hash_tensor_out));
}

}  // namespace kiln::torch_integration
