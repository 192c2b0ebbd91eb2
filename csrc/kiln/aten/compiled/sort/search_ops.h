// Compiled searchsorted and bucketize (Tensor and Scalar values, functional
// and out=): a binary search of every value in its row of boundaries (the
// one 1-D boundary tensor, or the row with the same leading indices), through
// `sorter` when given, as a row kernel (row_kernel.h).
//
// As the CPU: left finds the first boundary not below the value, right the
// first above it, with the comparisons written as !(b >= v) / !(b > v) so a
// NaN value lands past every boundary; mixed dtypes are compared in their
// promoted type. A sorter's range check reads its min and max (aminmax) back
// to the host, as the CPU's does: that call synchronizes the stream.
// Registered in aten/compiled/sort/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string_view>

namespace kiln::torch_integration::compiled {

at::Tensor searchsorted(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32, bool right,
                        std::optional<std::string_view> side, const std::optional<at::Tensor>& sorter);
at::Tensor& searchsorted_out(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32,
                             bool right, std::optional<std::string_view> side,
                             const std::optional<at::Tensor>& sorter, at::Tensor& out);
at::Tensor searchsorted_scalar(const at::Tensor& sorted_sequence, const at::Scalar& self, bool out_int32,
                               bool right, std::optional<std::string_view> side,
                               const std::optional<at::Tensor>& sorter);
at::Tensor& searchsorted_scalar_out(const at::Tensor& sorted_sequence, const at::Scalar& self, bool out_int32,
                                    bool right, std::optional<std::string_view> side,
                                    const std::optional<at::Tensor>& sorter, at::Tensor& out);
at::Tensor bucketize(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right);
at::Tensor& bucketize_out(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right,
                          at::Tensor& out);
at::Tensor bucketize_scalar(const at::Scalar& self, const at::Tensor& boundaries, bool out_int32, bool right);

}  // namespace kiln::torch_integration::compiled
