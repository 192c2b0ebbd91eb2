// C source (kiln_row, row_kernel.h) of the selection ops: topk, kthvalue,
// median/nanmedian along a dim, and mode. Each reproduces the element the
// CPU's kernel picks among equal keys (its algorithm's order, not just a
// valid answer):
//   topk      std::partial_sort when k * 64 <= n, else std::nth_element and,
//             when sorted, std::sort of the first k - 1 (cpu_order_source.h);
//   kthvalue  a median-of-three quickselect (Sedgewick's partitioning);
//   median    std::nth_element with ties broken by index (so: the element at
//             rank (n - 1) / 2 of a stable sort), or the first NaN;
//   mode      std::sort by value, then the last element of the first longest
//             run of equal values.
// Element helpers (value_*) come from row_element_type(..., "value", ...).
#pragma once

#include <string>

namespace kiln::torch_integration::compiled {

// Operands (self, values, indices); scalars[0] = k, scalars[1] = sorted.
std::string topk_row_source(bool largest);
// Operands (self, values, indices) with values/indices of length 1;
// scalars[0] = k (1-based).
std::string kthvalue_row_source();
// Operands (self, values, indices) with values/indices of length 1.
std::string median_row_source(bool ignore_nan);
std::string mode_row_source();

}  // namespace kiln::torch_integration::compiled
