// Reflection and replication padding over 1, 2 or 3 trailing dims, forward
// and backward (registered in aten/compiled/nn/spatial/registration.cc).
//
// Each output element copies one input element: along each padded dim, the
// output coordinate o maps to i = o - pad_before, reflected about the edges
// (-i below 0, 2 (size - 1) - i past the end; ATen limits reflection padding
// to less than the size, so one reflection suffices) or clamped into
// [0, size) for replication (negative padding crops). Those maps are the
// per-dim tables of a spatial gather (spatial_gather.h); the backward adds
// each grad_output element at its source, in grad_output's row-major order
// and in the tensor's dtype, as the CPU's kernel does.
//
// Shapes and errors: the structured meta functions where ATen has them;
// reflection_pad2d and the 2-D/3-D backwards without one are checked here
// with the CPU's messages. Dtypes: every real dtype but bool forward,
// floating ones backward, as the CPU; complex tensors take the CPU's kernel
// (compiled kernels have no complex dtype).
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/reflection_pad1d_backward_meta.h>
#include <ATen/ops/reflection_pad1d_backward_ops.h>
#include <ATen/ops/reflection_pad1d_meta.h>
#include <ATen/ops/reflection_pad1d_ops.h>
#include <ATen/ops/reflection_pad2d_backward_ops.h>
#include <ATen/ops/reflection_pad2d_ops.h>
#include <ATen/ops/reflection_pad3d_backward_meta.h>
#include <ATen/ops/reflection_pad3d_backward_ops.h>
#include <ATen/ops/reflection_pad3d_meta.h>
#include <ATen/ops/reflection_pad3d_ops.h>
#include <ATen/ops/replication_pad1d_backward_meta.h>
#include <ATen/ops/replication_pad1d_backward_ops.h>
#include <ATen/ops/replication_pad1d_meta.h>
#include <ATen/ops/replication_pad1d_ops.h>
#include <ATen/ops/replication_pad2d_backward_ops.h>
#include <ATen/ops/replication_pad2d_meta.h>
#include <ATen/ops/replication_pad2d_ops.h>
#include <ATen/ops/replication_pad3d_backward_ops.h>
#include <ATen/ops/replication_pad3d_meta.h>
#include <ATen/ops/replication_pad3d_ops.h>
#include <ATen/ops/zeros.h>

#include <algorithm>

#include "kiln/aten/compiled/nn/spatial/spatial_gather.h"
#include "kiln/aten/compiled/nn/spatial/padding_ops.h"
#include "kiln/aten/compiled/launch/structured_run.h"
#include "kiln/aten/cpu_fallback.h"

namespace kiln::torch_integration::compiled {
namespace {

enum class PadMode { kReflect, kReplicate };

// One axis per padded dim: padding holds (before, after) pairs from the last
// dim backwards.
std::vector<SpatialAxis> pad_axes(PadMode mode, at::IntArrayRef input_sizes, at::IntArrayRef padding) {
  const int64_t rank = static_cast<int64_t>(input_sizes.size());
  const int64_t padded = static_cast<int64_t>(padding.size()) / 2;
  std::vector<SpatialAxis> axes;
  for (int64_t k = padded - 1; k >= 0; --k) {
    SpatialAxis axis;
    axis.dim = rank - 1 - k;
    const int64_t size = input_sizes[axis.dim];
    const int64_t before = padding[2 * k];
    const int64_t output_size = size + before + padding[2 * k + 1];
    for (int64_t o = 0; o < output_size; ++o) {
      int64_t i = o - before;
      if (mode == PadMode::kReflect) {
        if (i < 0) i = -i;
        if (i >= size) i = 2 * (size - 1) - i;
      } else {
        i = std::clamp<int64_t>(i, 0, size - 1);
      }
      axis.indices.push_back(i);
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

bool is_complex_input(const at::Tensor& tensor) { return at::isComplexType(tensor.scalar_type()); }

void pad_forward(const char* op_name, const char* dispatch_name, PadMode mode,
                 const at::Tensor& input, at::IntArrayRef padding, const at::Tensor& output) {
  TORCH_CHECK_NOT_IMPLEMENTED(input.scalar_type() != at::kBool, "\"", dispatch_name,
                              "\" not implemented for 'Bool'");
  spatial_gather(op_name, input, output, pad_axes(mode, input.sizes(), padding), input.scalar_type());
}

void pad_backward(const char* op_name, const char* dispatch_name, PadMode mode,
                  const at::Tensor& grad_output, const at::Tensor& input, at::IntArrayRef padding,
                  const at::Tensor& grad_input) {
  const at::ScalarType type = grad_output.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(type), "\"", dispatch_name,
                              "\" not implemented for '", c10::toString(type), "'");
  spatial_scatter_add(op_name, grad_output, grad_input, pad_axes(mode, input.sizes(), padding),
                      type, /*float_buffer=*/false);
}

// reflection_pad2d's checks (it has no meta function); returns the output sizes.
std::vector<int64_t> reflection_pad2d_sizes(const at::Tensor& input, at::IntArrayRef padding) {
  TORCH_CHECK(padding.size() == 4, "padding size is expected to be 4, but got: ", padding.size());
  const int64_t rank = input.dim();
  bool valid = rank == 3 || rank == 4;
  for (int64_t dim = rank == 4 ? 1 : 0; valid && dim < rank; ++dim) valid = input.size(dim) != 0;
  TORCH_CHECK(valid, "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
              "non-zero dimensions for input, but got: ", input.sizes());
  const int64_t dim_w = rank - 1, dim_h = rank - 2;
  const int64_t width = input.size(dim_w), height = input.size(dim_h);
  TORCH_CHECK(padding[0] < width && padding[1] < width,
              "Argument #4: Padding size should be less than the corresponding input dimension, "
              "but got: padding (", padding[0], ", ", padding[1], ") at dimension ", dim_w,
              " of input ", input.sizes());
  TORCH_CHECK(padding[2] < height && padding[3] < height,
              "Argument #6: Padding size should be less than the corresponding input dimension, "
              "but got: padding (", padding[2], ", ", padding[3], ") at dimension ", dim_h,
              " of input ", input.sizes());
  const int64_t output_w = width + padding[0] + padding[1];
  const int64_t output_h = height + padding[2] + padding[3];
  TORCH_CHECK(output_w >= 1 || output_h >= 1, "input (H: ", height, ", W: ", width,
              ") is too small.  Calculated output H: ", output_h, " W: ", output_w);
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end());
  sizes[dim_w] = output_w;
  sizes[dim_h] = output_h;
  return sizes;
}

// The checks of the backwards without a meta function: padding length and
// grad_output's padded sizes (width, then height, then depth).
void check_pad_backward(const at::Tensor& grad_output, const at::Tensor& input,
                        at::IntArrayRef padding, int64_t padded_dims, bool long_message) {
  if (long_message) {
    TORCH_CHECK(static_cast<int64_t>(padding.size()) == 2 * padded_dims,
                "padding size is expected to be ", 2 * padded_dims, ", but got: ", padding.size());
  } else {
    TORCH_CHECK(static_cast<int64_t>(padding.size()) == 2 * padded_dims,
                "padding size is expected to be ", 2 * padded_dims);
  }
  TORCH_CHECK(grad_output.dim() == input.dim(), "gradOutput has ", grad_output.dim(),
              " dims, expected ", input.dim());
  static const char* kNames[] = {"width", "height", "depth"};
  const int64_t rank = input.dim();
  for (int64_t k = 0; k < padded_dims; ++k) {
    const int64_t dim = rank - 1 - k;
    const int64_t expected = input.size(dim) + padding[2 * k] + padding[2 * k + 1];
    TORCH_CHECK(grad_output.size(dim) == expected, "gradOutput ", kNames[k],
                " unexpected. Expected: ", expected, ", Got: ", grad_output.size(dim));
  }
  for (int64_t dim = 0; dim < rank - padded_dims; ++dim) {
    TORCH_CHECK(grad_output.size(dim) == input.size(dim), "gradOutput ",
                dim == rank - padded_dims - 1 ? "channel" : "batch", " unexpected. Expected: ",
                input.size(dim), ", Got: ", grad_output.size(dim));
  }
}

}  // namespace

at::Tensor reflection_pad1d(const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(self)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad1d>::call(self, padding);
  }
  return structured<at::meta::structured_reflection_pad1d>(nullptr, [&](const at::Tensor& output) {
    pad_forward("aten::reflection_pad1d", "reflection_pad1d", PadMode::kReflect, self, padding, output);
  }, self, padding);
}

at::Tensor& reflection_pad1d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out) {
  if (is_complex_input(self)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad1d_out>::call(self, padding, out);
    return out;
  }
  structured<at::meta::structured_reflection_pad1d>(&out, [&](const at::Tensor& output) {
    pad_forward("aten::reflection_pad1d", "reflection_pad1d", PadMode::kReflect, self, padding, output);
  }, self, padding);
  return out;
}

at::Tensor reflection_pad1d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(grad_output)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad1d_backward>::call(grad_output, self, padding);
  }
  return structured<at::meta::structured_reflection_pad1d_backward>(nullptr, [&](const at::Tensor& result) {
    pad_backward("aten::reflection_pad1d_backward", "reflection_pad1d_backward", PadMode::kReflect, grad_output, self, padding, result);
  }, grad_output, self, padding);
}

at::Tensor& reflection_pad1d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input) {
  if (is_complex_input(grad_output)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad1d_backward_grad_input>::call(grad_output, self, padding, grad_input);
    return grad_input;
  }
  structured<at::meta::structured_reflection_pad1d_backward>(&grad_input, [&](const at::Tensor& result) {
    pad_backward("aten::reflection_pad1d_backward", "reflection_pad1d_backward", PadMode::kReflect, grad_output, self, padding, result);
  }, grad_output, self, padding);
  return grad_input;
}

at::Tensor reflection_pad2d(const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(self)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad2d>::call(self, padding);
  }
  std::vector<int64_t> sizes = reflection_pad2d_sizes(self, padding);
  at::Tensor output = at::empty(sizes, self.options().memory_format(self.suggest_memory_format()));
  pad_forward("aten::reflection_pad2d", "reflection_pad2d", PadMode::kReflect, self, padding, output);
  return output;
}

at::Tensor& reflection_pad2d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out) {
  if (is_complex_input(self)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad2d_out>::call(self, padding, out);
    return out;
  }
  std::vector<int64_t> sizes = reflection_pad2d_sizes(self, padding);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ", self.scalar_type(), ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, sizes);
  pad_forward("aten::reflection_pad2d", "reflection_pad2d", PadMode::kReflect, self, padding, out);
  return out;
}

at::Tensor reflection_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(grad_output)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad2d_backward>::call(grad_output, self, padding);
  }
  check_pad_backward(grad_output, self, padding, 2, true);
  at::Tensor result = at::empty(self.sizes(), grad_output.options().memory_format(self.suggest_memory_format()));
  pad_backward("aten::reflection_pad2d_backward", "reflection_pad2d_backward", PadMode::kReflect, grad_output, self, padding, result);
  return result;
}

at::Tensor& reflection_pad2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input) {
  if (is_complex_input(grad_output)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad2d_backward_grad_input>::call(grad_output, self, padding, grad_input);
    return grad_input;
  }
  check_pad_backward(grad_output, self, padding, 2, true);
  at::native::resize_output(grad_input, self.sizes());
  pad_backward("aten::reflection_pad2d_backward", "reflection_pad2d_backward", PadMode::kReflect, grad_output, self, padding, grad_input);
  return grad_input;
}

at::Tensor reflection_pad3d(const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(self)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad3d>::call(self, padding);
  }
  return structured<at::meta::structured_reflection_pad3d>(nullptr, [&](const at::Tensor& output) {
    pad_forward("aten::reflection_pad3d", "reflection_pad3d", PadMode::kReflect, self, padding, output);
  }, self, padding);
}

at::Tensor& reflection_pad3d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out) {
  if (is_complex_input(self)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad3d_out>::call(self, padding, out);
    return out;
  }
  structured<at::meta::structured_reflection_pad3d>(&out, [&](const at::Tensor& output) {
    pad_forward("aten::reflection_pad3d", "reflection_pad3d", PadMode::kReflect, self, padding, output);
  }, self, padding);
  return out;
}

at::Tensor reflection_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(grad_output)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad3d_backward>::call(grad_output, self, padding);
  }
  return structured<at::meta::structured_reflection_pad3d_backward>(nullptr, [&](const at::Tensor& result) {
    pad_backward("aten::reflection_pad3d_backward", "reflection_pad3d_backward", PadMode::kReflect, grad_output, self, padding, result);
  }, grad_output, self, padding);
}

at::Tensor& reflection_pad3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input) {
  if (is_complex_input(grad_output)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::reflection_pad3d_backward_grad_input>::call(grad_output, self, padding, grad_input);
    return grad_input;
  }
  structured<at::meta::structured_reflection_pad3d_backward>(&grad_input, [&](const at::Tensor& result) {
    pad_backward("aten::reflection_pad3d_backward", "reflection_pad3d_backward", PadMode::kReflect, grad_output, self, padding, result);
  }, grad_output, self, padding);
  return grad_input;
}

at::Tensor replication_pad1d(const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(self)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad1d>::call(self, padding);
  }
  return structured<at::meta::structured_replication_pad1d>(nullptr, [&](const at::Tensor& output) {
    pad_forward("aten::replication_pad1d", "replication_pad1d", PadMode::kReplicate, self, padding, output);
  }, self, padding);
}

at::Tensor& replication_pad1d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out) {
  if (is_complex_input(self)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad1d_out>::call(self, padding, out);
    return out;
  }
  structured<at::meta::structured_replication_pad1d>(&out, [&](const at::Tensor& output) {
    pad_forward("aten::replication_pad1d", "replication_pad1d", PadMode::kReplicate, self, padding, output);
  }, self, padding);
  return out;
}

at::Tensor replication_pad1d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(grad_output)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad1d_backward>::call(grad_output, self, padding);
  }
  return structured<at::meta::structured_replication_pad1d_backward>(nullptr, [&](const at::Tensor& result) {
    pad_backward("aten::replication_pad1d_backward", "replication_pad1d_backward", PadMode::kReplicate, grad_output, self, padding, result);
  }, grad_output, self, padding);
}

at::Tensor& replication_pad1d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input) {
  if (is_complex_input(grad_output)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad1d_backward_grad_input>::call(grad_output, self, padding, grad_input);
    return grad_input;
  }
  structured<at::meta::structured_replication_pad1d_backward>(&grad_input, [&](const at::Tensor& result) {
    pad_backward("aten::replication_pad1d_backward", "replication_pad1d_backward", PadMode::kReplicate, grad_output, self, padding, result);
  }, grad_output, self, padding);
  return grad_input;
}

at::Tensor replication_pad2d(const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(self)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad2d>::call(self, padding);
  }
  return structured<at::meta::structured_replication_pad2d>(nullptr, [&](const at::Tensor& output) {
    pad_forward("aten::replication_pad2d", "replication_pad2d", PadMode::kReplicate, self, padding, output);
  }, self, padding);
}

at::Tensor& replication_pad2d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out) {
  if (is_complex_input(self)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad2d_out>::call(self, padding, out);
    return out;
  }
  structured<at::meta::structured_replication_pad2d>(&out, [&](const at::Tensor& output) {
    pad_forward("aten::replication_pad2d", "replication_pad2d", PadMode::kReplicate, self, padding, output);
  }, self, padding);
  return out;
}

at::Tensor replication_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(grad_output)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad2d_backward>::call(grad_output, self, padding);
  }
  check_pad_backward(grad_output, self, padding, 2, false);
  at::Tensor result = at::empty(self.sizes(), grad_output.options().memory_format(self.suggest_memory_format()));
  pad_backward("aten::replication_pad2d_backward", "replication_pad2d_backward", PadMode::kReplicate, grad_output, self, padding, result);
  return result;
}

at::Tensor& replication_pad2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input) {
  if (is_complex_input(grad_output)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad2d_backward_grad_input>::call(grad_output, self, padding, grad_input);
    return grad_input;
  }
  check_pad_backward(grad_output, self, padding, 2, false);
  at::native::resize_output(grad_input, self.sizes());
  pad_backward("aten::replication_pad2d_backward", "replication_pad2d_backward", PadMode::kReplicate, grad_output, self, padding, grad_input);
  return grad_input;
}

at::Tensor replication_pad3d(const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(self)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad3d>::call(self, padding);
  }
  return structured<at::meta::structured_replication_pad3d>(nullptr, [&](const at::Tensor& output) {
    pad_forward("aten::replication_pad3d", "replication_pad3d", PadMode::kReplicate, self, padding, output);
  }, self, padding);
}

at::Tensor& replication_pad3d_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out) {
  if (is_complex_input(self)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad3d_out>::call(self, padding, out);
    return out;
  }
  structured<at::meta::structured_replication_pad3d>(&out, [&](const at::Tensor& output) {
    pad_forward("aten::replication_pad3d", "replication_pad3d", PadMode::kReplicate, self, padding, output);
  }, self, padding);
  return out;
}

at::Tensor replication_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  if (is_complex_input(grad_output)) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad3d_backward>::call(grad_output, self, padding);
  }
  check_pad_backward(grad_output, self, padding, 3, false);
  at::Tensor result = at::empty(self.sizes(), grad_output.options().memory_format(self.suggest_memory_format()));
  pad_backward("aten::replication_pad3d_backward", "replication_pad3d_backward", PadMode::kReplicate, grad_output, self, padding, result);
  return result;
}

at::Tensor& replication_pad3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, at::Tensor& grad_input) {
  if (is_complex_input(grad_output)) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::replication_pad3d_backward_grad_input>::call(grad_output, self, padding, grad_input);
    return grad_input;
  }
  check_pad_backward(grad_output, self, padding, 3, false);
  at::native::resize_output(grad_input, self.sizes());
  pad_backward("aten::replication_pad3d_backward", "replication_pad3d_backward", PadMode::kReplicate, grad_output, self, padding, grad_input);
  return grad_input;
}

}  // namespace kiln::torch_integration::compiled
