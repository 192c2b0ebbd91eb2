// Compiled scatter-style ops: each element of a source is stored (or added,
// multiplied, maxed, ...) at a position chosen by an index. The kernels store
// through Builder::store_indexed and so run on one thread, in position order;
// reductions other than a sum read the old value through a second operand
// aliasing the output. ATen's checks and messages come first; out-of-range
// indices follow index_checks.h (an out-of-range position is clamped: a sum
// adds nothing, a store lands inside the output). Registered in
// aten/compiled/indexing/registration.cc.
#pragma once

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>

#include <optional>
#include <string_view>

namespace kiln::torch_integration::compiled {

at::Tensor& scatter_src_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out);
at::Tensor& scatter_value_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const c10::Scalar& value, at::Tensor& out);
at::Tensor& scatter_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                               const at::Tensor& src, c10::string_view reduce, at::Tensor& out);
at::Tensor& scatter_value_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                     const c10::Scalar& value, c10::string_view reduce,
                                     at::Tensor& out);
at::Tensor& scatter_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out);
at::Tensor& scatter_reduce_two_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Tensor& src, c10::string_view reduce,
                                   bool include_self, at::Tensor& out);

at::Tensor& index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                            const at::Tensor& values, bool accumulate, bool unsafe);
at::Tensor& index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, const c10::Scalar& alpha, at::Tensor& out);
at::Tensor& index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             const at::Tensor& source, c10::string_view reduce, bool include_self,
                             at::Tensor& out);
at::Tensor& index_fill_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const c10::Scalar& value);
at::Tensor& index_fill_tensor_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                               const at::Tensor& value);
at::Tensor& index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                           const at::Tensor& source, at::Tensor& out);
at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices,
                                    int64_t num_weights, int64_t padding_idx,
                                    bool scale_grad_by_freq);
at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source);
at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source,
                 bool accumulate);

}  // namespace kiln::torch_integration::compiled
