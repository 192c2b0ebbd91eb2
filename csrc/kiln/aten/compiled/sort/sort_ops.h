// Compiled sort (functional and out=): a stable merge sort of every row along
// `dim`, one row per launch position (row_kernel.h, sort_source.h). argsort
// and msort are CompositeImplicitAutograd in ATen and decompose into these.
// Registered in aten/compiled/sort/registration.cc.
//
// The CPU's order is matched exactly: NaN sorts as the largest value
// (descending puts it first); stable=True keeps ties in input order, and
// stable=False reproduces the order of the CPU's std::sort among ties
// (cpu_order_source.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor> sort_stable(const at::Tensor& self, std::optional<bool> stable,
                                               int64_t dim, bool descending);
std::tuple<at::Tensor&, at::Tensor&> sort_stable_out(const at::Tensor& self, std::optional<bool> stable,
                                                     int64_t dim, bool descending, at::Tensor& values,
                                                     at::Tensor& indices);

// Sorts the rows of `self` along `dim` (wrapped) into `values` and `indices`
// (already sized like self). Shared with the ops built on a full sort.
void sort_into(const char* op_name, const at::Tensor& self, int64_t dim, bool descending, bool stable,
               const at::Tensor& values, const at::Tensor& indices);

}  // namespace kiln::torch_integration::compiled
