// Reflection and replication padding over 1, 2 or 3 trailing dims, forward
// and backward (padding_ops.cc).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor reflection_pad1d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad1d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor reflection_pad1d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad1d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);
at::Tensor reflection_pad2d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad2d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor reflection_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);
at::Tensor reflection_pad3d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad3d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor reflection_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& reflection_pad3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);
at::Tensor replication_pad1d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad1d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor replication_pad1d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad1d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);
at::Tensor replication_pad2d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad2d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor replication_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);
at::Tensor replication_pad3d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad3d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out);
at::Tensor replication_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor& replication_pad3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input);

}  // namespace kiln::torch_integration::compiled
