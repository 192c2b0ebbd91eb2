// C source of the element orders PyTorch's CPU kernels produce with the C++
// standard library's unstable algorithms (libstdc++'s std::sort,
// std::nth_element and std::partial_sort, which ATen's sort, topk and mode
// call), so that kiln reproduces the CPU's choice among equal keys exactly,
// not just a valid order. Written from the algorithms' published behaviour
// (introsort: median-of-three Hoare partitions down to runs of 16, heapsort
// past a depth of 2 log2(n), a final insertion sort; introselect likewise down
// to runs of 3); no library code is used.
//
// Plain strings, no torch.
#pragma once

#include <string>
#include <string_view>

namespace kiln::torch_integration::compiled {

// For the pair type `<prefix>_pair` { <prefix>_compute key; int64_t index; }
// and a comparison `less` (a C expression of `a` and `b`, two pairs, true
// when a goes strictly before b), the functions
//   <name>_sort(pairs, n)                   std::sort
//   <name>_nth_element(pairs, nth, n)       std::nth_element
//   <name>_partial_sort(pairs, middle, n)   std::partial_sort
// Define the pair type first with cpu_order_pair_source(prefix).
std::string cpu_order_source(std::string_view prefix, std::string_view name, std::string_view less);

// typedef struct { <prefix>_compute key; int64_t index; } <prefix>_pair;
std::string cpu_order_pair_source(std::string_view prefix);

}  // namespace kiln::torch_integration::compiled
