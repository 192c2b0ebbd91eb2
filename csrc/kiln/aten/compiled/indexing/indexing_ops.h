// Compiled gather-style ops: each output element is an indexed load from its
// source (indexed_kernel.h), after ATen's own shape, dtype and overlap checks.
// Out-of-range indices follow index_checks.h. nonzero and masked_select learn
// their result size with one synchronising read of a compiled count.
// Registered in aten/compiled/indexing/registration.cc.
#pragma once

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>

#include <optional>

namespace kiln::torch_integration::compiled {

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index);
at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             at::Tensor& out);
at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad);
at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                       bool sparse_grad, at::Tensor& out);
at::Tensor take(const at::Tensor& self, const at::Tensor& index);
at::Tensor& take_out(const at::Tensor& self, const at::Tensor& index, at::Tensor& out);
at::Tensor index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices);
at::Tensor& index_out(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                      at::Tensor& out);
at::Tensor nonzero(const at::Tensor& self);
at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out);
at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask);
at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
