// Advanced indexing (x[i, :, j], x[mask]) planned as ATen plans it
// (make_info / AdvancedIndex in TensorAdvancedIndexing.cpp, not exported by
// libtorch): bool masks become the index tensors of their nonzero() (compiled,
// one synchronisation to learn the count), index tensors broadcast together,
// non-adjacent indexed dims move to the front, and `src` is `self` restrided
// to the result's shape with stride 0 over the indexed subspace. Every
// element of the result is then src[position + sum_k index_k * stride_k].
#pragma once

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

#include "kiln/aten/compiled/launch/indexed_kernel.h"

namespace kiln::torch_integration::compiled {

struct AdvancedIndexPlan {
  at::Tensor src;  // self restrided to the result's shape
  // One per indexed dim, in order: the term over src's shape, and the index
  // tensor as given (on the device) for the bounds check, or undefined when it
  // came from a mask (always in range).
  std::vector<IndexTerm> terms;
  std::vector<at::Tensor> checked;
};

// Raises ATen's errors for bad index lists (types, mask shapes, broadcasting,
// too many indices, indexing a dim of size 0).
AdvancedIndexPlan plan_advanced_index(const at::Tensor& self,
                                      const c10::List<std::optional<at::Tensor>>& indices);

// Queues the bounds checks of a plan: IndexError "index X is out of bounds
// for dimension k with size S", k counting indexed dims (as the CPU does).
void check_advanced_index(const char* op_name, const AdvancedIndexPlan& plan);

// The number of nonzero elements of `self`: a compiled count, read back (a
// synchronisation).
int64_t count_nonzero(const char* op_name, const at::Tensor& self);

// nonzero into a fresh (count, self.dim()) int64 tensor: a compiled count,
// one synchronising read of it, then a compiled single-threaded fill.
at::Tensor nonzero_compiled(const char* op_name, const at::Tensor& self);

// For the compacting kernels (nonzero, masked_select): `result` is the first
// rows of a fresh allocation whose last row is the kernel's scratch slot (a
// kernel's stores cannot be skipped, so an element that is not kept is
// written there). Sets the storage's size to the result's, as the CPU's
// result has: the slot stays allocated past the storage's end, as a caching
// allocator's rounding does, and nothing that reads the storage (a nested
// tensor's buffer, untyped_storage(), serialization) sees it.
void fit_storage_to_result(const at::Tensor& result);

}  // namespace kiln::torch_integration::compiled
