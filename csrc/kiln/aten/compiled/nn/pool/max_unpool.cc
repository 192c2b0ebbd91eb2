// max_unpool2d and max_unpool3d (registered in nn/pool/registration.cc;
// autograd's formula for them is a gather, already compiled).
//
// The output is zeroed, then each input element is written at its index
// (d * H * W + h * W + w within its output plane), on one thread in the
// input's row-major order (where two elements share an index the later one
// stays; the CPU's parallel kernel keeps either). An index outside the plane is the CPU's error
// (index_checks.h: raised before the launch when the stream is idle, else
// by the next synchronizing call); the kernel never writes outside.
//
// Arguments and their errors are the CPU's; dtypes floating, as the CPU.
#include <ATen/ops/empty.h>

#include <string>
#include <vector>

#include "kiln/aten/compiled/launch/index_checks.h"
#include "kiln/aten/compiled/launch/indexed_kernel.h"
#include "kiln/aten/compiled/nn/pool/max_unpool.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

void check_common(const char* name, const at::Tensor& self, const at::Tensor& indices,
                  int64_t spatial) {
  TORCH_CHECK(self.sizes() == indices.sizes(), "Expected shape of indices to be same as that of the "
              "input tensor (", self.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  for (int64_t dim = 1; dim < self.dim(); ++dim) {
    TORCH_CHECK(self.size(dim) > 0, name, "_forward_out_cpu(): ",
                "Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", dim, " being empty.");
  }
  const at::ScalarType type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(type), "\"", spatial == 2 ? "max_unpool2d" : "max_unpool3d",
                              "\" not implemented for '", c10::toString(type), "'");
}

}  // namespace

void plane_scatter(const char* op_name, const at::Tensor& self, const at::Tensor& indices,
                   at::IntArrayRef output_size, const at::Tensor& output, bool accumulate) {
  const int64_t spatial = static_cast<int64_t>(output_size.size());
  int64_t plane = 1;
  for (int64_t size : output_size) plane *= size;
  if (self.numel() == 0) return;
  // Batched views: (N, C, ...) on both sides.
  const bool batched = self.dim() == spatial + 2;
  at::Tensor source = batched ? self : self.unsqueeze(0);
  at::Tensor index = batched ? indices : indices.unsqueeze(0);
  at::Tensor target = batched ? output : output.unsqueeze(0);
  c10::DimVector base(target.dim(), 0);
  base[0] = target.stride(0);
  base[1] = target.stride(1);
  const int64_t height = output_size[spatial - 2], width = output_size[spatial - 1];
  const int64_t depth_stride = spatial == 3 ? target.stride(2) : 0;
  IndexedKernelSpec spec;
  spec.key = accumulate ? "plane_scatter_add" : "plane_scatter";
  spec.single_threaded = true;
  spec.logical_order = true;
  spec.body = [accumulate](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    auto i64 = [&](double value) { return builder.constant(value, ir::DType::kInt64); };
    auto floor_div = [&](ValueId numerator, ValueId denominator) {
      // Exact in float64 below 2^53 (indices are plane offsets).
      ValueId quotient = builder.binary(OpCode::kDivide, builder.cast(numerator, ir::DType::kFloat64),
                                        builder.cast(denominator, ir::DType::kFloat64));
      return builder.cast(builder.unary(OpCode::kFloor, quotient), ir::DType::kInt64);
    };
    ValueId index = builder.cast(builder.load(1), ir::DType::kInt64);
    ValueId plane_size = context.scalars[0];
    ValueId valid = builder.binary(OpCode::kLogicalAnd, builder.binary(OpCode::kLessEqual, i64(0), index),
                                   builder.binary(OpCode::kLess, index, plane_size));
    index = builder.select(valid, index, i64(0));
    ValueId height_width = builder.binary(OpCode::kMultiply, context.scalars[1], context.scalars[2]);
    ValueId d = floor_div(index, height_width);
    ValueId rest = builder.binary(OpCode::kSubtract, index, builder.binary(OpCode::kMultiply, d, height_width));
    ValueId h = floor_div(rest, context.scalars[2]);
    ValueId w = builder.binary(OpCode::kSubtract, rest, builder.binary(OpCode::kMultiply, h, context.scalars[2]));
    ValueId offset = builder.binary(OpCode::kAdd, builder.binary(OpCode::kMultiply, d, context.scalars[3]),
                                    builder.binary(OpCode::kAdd, builder.binary(OpCode::kMultiply, h, context.scalars[4]),
                                                   builder.binary(OpCode::kMultiply, w, context.scalars[5])));
    ValueId value = builder.cast(builder.load(0), context.output_dtypes[0]);
    // An index outside the plane (an error raised elsewhere) adds zero.
    if (accumulate) value = builder.select(valid, value, builder.constant(0, builder.dtype_of(value)));
    builder.store_indexed(0, value, offset, accumulate);
  };
  launch_indexed_kernel(op_name, spec, source.sizes(), {operand_of(source), operand_of(index)},
                        {operand_with_strides(target, base)},
                        {c10::Scalar(plane), c10::Scalar(height), c10::Scalar(width),
                         c10::Scalar(depth_stride), c10::Scalar(target.stride(-2)),
                         c10::Scalar(target.stride(-1))});
}

namespace {

// Zeroes `output` (batch, channels, D, H, W: D = 1 for 2-D) and scatters.
void unpool_into(const char* op_name, const at::Tensor& self, const at::Tensor& indices,
                 at::IntArrayRef output_size, const at::Tensor& output, const std::string& sizes_text) {
  output.zero_();
  int64_t plane = 1;
  for (int64_t size : output_size) plane *= size;
  check_index_bounds(op_name, indices, {plane, /*wraps=*/false}, ErrorType::kRuntimeError,
                     [sizes_text](int64_t index) {
                       return "Found an invalid max index: " + std::to_string(index) +
                              " (output volumes are of size " + sizes_text + ")";
                     });
  plane_scatter(op_name, self, indices, output_size, output, /*accumulate=*/false);
}

std::vector<int64_t> output_sizes(const at::Tensor& self, at::IntArrayRef output_size) {
  const int64_t spatial = static_cast<int64_t>(output_size.size());
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end() - spatial);
  sizes.insert(sizes.end(), output_size.begin(), output_size.end());
  return sizes;
}

void check_2d(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size) {
  TORCH_CHECK(indices.scalar_type() == at::kLong,
              "elements in indices should be type int64 but got: ", indices.scalar_type());
  TORCH_CHECK(output_size.size() == 2, "There should be exactly two elements (height, width) in "
              "output_size, but got ", output_size.size(), " elements.");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "Input to max_unpooling2d should be a 3d or 4d "
              "Tensor, but got a tensor with ", self.dim(), " dimensions.");
  check_common("max_unpooling2d", self, indices, 2);
}

void check_3d(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size,
              at::IntArrayRef stride, at::IntArrayRef padding) {
  TORCH_CHECK(indices.scalar_type() == at::kLong, "elements in indices should be type int64");
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5, "Input to max_unpooling3d should be a 4d or 5d "
              "Tensor, but got a tensor with ", self.dim(), " dimensions.");
  TORCH_CHECK(output_size.size() == 3, "There should be exactly three elements (depth, height, "
              "width) in output_size, but got ", output_size.size(), " elements.");
  TORCH_CHECK(stride.size() == 3, "There should be exactly three elements (depth, height, width) "
              "in stride, but got: ", stride.size(), " elements.");
  TORCH_CHECK(padding.size() == 3, "There should be exactly three elements (depth, height, width) "
              "in padding, but got: ", padding.size(), " elements.");
  check_common("max_unpooling3d", self, indices, 3);
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0,
              "strides should be greater than zero, but got stride: ", stride);
}

std::string sizes_text(at::IntArrayRef output_size) {
  std::string text;
  for (size_t k = 0; k < output_size.size(); ++k) {
    text += (k ? "x" : "") + std::to_string(output_size[k]);
  }
  return text;
}

}  // namespace

at::Tensor& max_unpool2d_out(const at::Tensor& self, const at::Tensor& indices,
                             at::IntArrayRef output_size, at::Tensor& out) {
  check_2d(self, indices, output_size);
  out.resize_(output_sizes(self, output_size), self.suggest_memory_format());
  unpool_into("aten::max_unpool2d", self, indices, output_size, out, sizes_text(output_size));
  return out;
}

at::Tensor max_unpool2d(const at::Tensor& self, const at::Tensor& indices,
                        at::IntArrayRef output_size) {
  at::Tensor output = at::empty({0}, self.options());
  return max_unpool2d_out(self, indices, output_size, output);
}

at::Tensor& max_unpool3d_out(const at::Tensor& self, const at::Tensor& indices,
                             at::IntArrayRef output_size, at::IntArrayRef stride,
                             at::IntArrayRef padding, at::Tensor& out) {
  check_3d(self, indices, output_size, stride, padding);
  out.resize_(output_sizes(self, output_size), self.suggest_memory_format());
  unpool_into("aten::max_unpool3d", self, indices, output_size, out, sizes_text(output_size));
  return out;
}

at::Tensor max_unpool3d(const at::Tensor& self, const at::Tensor& indices,
                        at::IntArrayRef output_size, at::IntArrayRef stride,
                        at::IntArrayRef padding) {
  at::Tensor output = at::empty({0}, self.options());
  return max_unpool3d_out(self, indices, output_size, stride, padding, output);
}

}  // namespace kiln::torch_integration::compiled
