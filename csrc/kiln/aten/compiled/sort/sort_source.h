// C source for the sorting family's row kernels (row_kernel.h): a stable merge
// sort of (key, index) pairs, and the kernels of sort, topk and kthvalue
// built on it. Plain strings, no torch: the text is the kernel.
//
// Order: PyTorch's CPU order. Ascending puts NaN after every number;
// descending puts NaN first; ties keep their original order (stable), which
// is also what the CPU's std::sort does for the row lengths it handles with
// insertion sort.
#pragma once

#include <string>
#include <string_view>

namespace kiln::torch_integration::compiled {

// For keys of type `<prefix>_compute` (row_element_type): the comparisons
//   <prefix>_before_ascending(a, b), <prefix>_before_descending(a, b)
// (a strictly before b) and the stable sorts
//   <prefix>_sort_ascending(keys, indices, key_scratch, index_scratch, n)
//   <prefix>_sort_descending(...)
// which sort keys[0, n) with indices[0, n) carried along, using the scratch
// arrays (n each).
std::string stable_sort_source(std::string_view prefix);

// kiln_row for sort.values_stable: operands (self, values, indices).
std::string sort_row_source(bool descending);
// The same with the CPU's unstable order (std::sort, cpu_order_source.h).
std::string unstable_sort_row_source(bool descending);

}  // namespace kiln::torch_integration::compiled
