// im2col (F.unfold) and col2im (F.fold), each the other's backward
// (registered in aten/compiled/nn/spatial/registration.cc).
//
// Both run over the column tensor seen as (N, C, kh, kw, out_h, out_w): the
// element at (n, c, i, j, y, x) is the input pixel (y * stride_h - pad_h +
// i * dilation_h, x * stride_w - pad_w + j * dilation_w) of plane (n, c), or
// zero outside it. The host computes that pixel's row and column offsets per
// (i, y) and per (j, x) (-1 outside the image): two small tables the kernel
// reads through strides. im2col gathers; col2im zeroes its output and adds
// each column element at its pixel on one thread in the column tensor's
// order, the order in which ATen's CPU kernel adds.
//
// Arguments and their errors: ATen's own shape checks (im2col_shape_check.h).
// Dtypes: floating and bool, as the CPU; complex tensors take the CPU's
// kernel (compiled kernels have no complex dtype).
#include <ATen/native/CPUFallback.h>
#include <ATen/native/im2col_shape_check.h>
#include <ATen/ops/col2im_ops.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/im2col_ops.h>

#include "kiln/aten/compiled/launch/indexed_kernel.h"
#include "kiln/aten/compiled/nn/spatial/im2col_ops.h"
#include "kiln/aten/cpu_fallback.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::ValueId;

struct Window {
  int64_t kernel_h, kernel_w, dilation_h, dilation_w, pad_h, pad_w, stride_h, stride_w;
};

Window window_of(at::IntArrayRef kernel_size, at::IntArrayRef dilation, at::IntArrayRef padding,
                 at::IntArrayRef stride) {
  TORCH_CHECK(kernel_size.size() == 2, "It is expected kernel_size equals to 2, but got size ",
              kernel_size.size());
  TORCH_CHECK(dilation.size() == 2, "It is expected dilation equals to 2, but got size ",
              dilation.size());
  TORCH_CHECK(padding.size() == 2, "It is expected padding equals to 2, but got size ",
              padding.size());
  TORCH_CHECK(stride.size() == 2, "It is expected stride equals to 2, but got size ", stride.size());
  return {kernel_size[0], kernel_size[1], dilation[0], dilation[1],
          padding[0],     padding[1],     stride[0],   stride[1]};
}

int64_t blocks_along(int64_t size, int64_t pad, int64_t dilation, int64_t kernel, int64_t stride) {
  return (size + 2 * pad - (dilation * (kernel - 1) + 1)) / stride + 1;
}

// Offsets (pixel * `stride_elements`, or -1 outside [0, size)) of tap i at
// block y: entry i * blocks + y.
at::Tensor pixel_table(int64_t kernel, int64_t blocks, int64_t step, int64_t pad, int64_t dilation,
                       int64_t size, int64_t stride_elements, const at::Device& device) {
  at::Tensor table = at::empty({kernel * blocks}, at::TensorOptions().dtype(at::kLong));
  int64_t* data = table.data_ptr<int64_t>();
  for (int64_t i = 0; i < kernel; ++i) {
    for (int64_t y = 0; y < blocks; ++y) {
      const int64_t pixel = y * step - pad + i * dilation;
      data[i * blocks + y] = pixel >= 0 && pixel < size ? pixel * stride_elements : -1;
    }
  }
  return table.to(device);
}

void check_dtype(const at::Tensor& tensor, const char* name) {
  const at::ScalarType type = tensor.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(type) || type == at::kBool, "\"", name,
                              "\" not implemented for '", c10::toString(type), "'");
}

// The 6-D (N, C, kh, kw, out_h, out_w) view of a column tensor (N, C*kh*kw, L).
c10::DimVector column_strides(const at::Tensor& columns, const Window& w, int64_t blocks_w) {
  const int64_t plane = columns.stride(1), position = columns.stride(2);
  return {columns.stride(0), w.kernel_h * w.kernel_w * plane, w.kernel_w * plane, plane,
          blocks_w * position, position};
}

// The shared kernel: im2col gathers `image` into `columns`; col2im adds
// `columns` into `image`. Both batched (4-D image, 3-D columns).
void launch(const char* op_name, bool gather, const at::Tensor& image, const at::Tensor& columns,
            const Window& w, int64_t blocks_h, int64_t blocks_w) {
  const int64_t batch = image.size(0), channels = image.size(1);
  const c10::DimVector shape{batch, channels, w.kernel_h, w.kernel_w, blocks_h, blocks_w};
  if (c10::multiply_integers(shape) == 0) return;
  at::Tensor rows = pixel_table(w.kernel_h, blocks_h, w.stride_h, w.pad_h, w.dilation_h,
                                image.size(2), image.stride(2), image.device());
  at::Tensor cols = pixel_table(w.kernel_w, blocks_w, w.stride_w, w.pad_w, w.dilation_w,
                                image.size(3), image.stride(3), image.device());
  KernelOperand image_base = operand_with_strides(image, {image.stride(0), image.stride(1), 0, 0, 0, 0});
  KernelOperand column_view = operand_with_strides(columns, column_strides(columns, w, blocks_w));
  KernelOperand row_table = operand_with_strides(rows, {0, 0, blocks_h, 0, 1, 0});
  KernelOperand column_table = operand_with_strides(cols, {0, 0, 0, blocks_w, 0, 1});
  IndexedKernelSpec spec;
  spec.key = gather ? "im2col" : "col2im";
  spec.single_threaded = !gather;
  spec.logical_order = !gather;
  spec.body = [gather](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    ValueId row = builder.load(1), column = builder.load(2);
    ValueId zero = builder.constant(0, ir::DType::kInt64);
    ValueId valid = builder.binary(ir::OpCode::kLogicalAnd, builder.binary(ir::OpCode::kLessEqual, zero, row),
                                   builder.binary(ir::OpCode::kLessEqual, zero, column));
    ValueId offset = builder.select(valid, builder.binary(ir::OpCode::kAdd, row, column), zero);
    const ir::DType output = context.output_dtypes[0];
    if (gather) {
      ValueId value = builder.cast(builder.indexed_load(0, offset), output);
      builder.store(0, builder.select(valid, value, builder.constant(0, builder.dtype_of(value))));
    } else {
      // Outside the image: adds zero at offset 0, which changes nothing (the
      // sum there started at +0).
      ValueId value = builder.cast(builder.load(0), output);
      value = builder.select(valid, value, builder.constant(0, builder.dtype_of(value)));
      builder.store_indexed(0, value, offset, /*accumulate=*/true);
    }
  };
  if (gather) {
    launch_indexed_kernel(op_name, spec, shape, {image_base, row_table, column_table}, {column_view});
  } else {
    launch_indexed_kernel(op_name, spec, shape, {column_view, row_table, column_table}, {image_base});
  }
}

void im2col_into(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                 at::IntArrayRef padding, at::IntArrayRef stride, at::Tensor& output) {
  const Window w = window_of(kernel_size, dilation, padding, stride);
  at::native::im2col_shape_check(input, at::Tensor(), w.kernel_h, w.kernel_w, w.dilation_h,
                                 w.dilation_w, w.pad_h, w.pad_w, w.stride_h, w.stride_w);
  check_dtype(input, "im2col_out_cpu");
  const bool batched = input.dim() == 4;
  at::Tensor image = batched ? input : input.unsqueeze(0);
  const int64_t blocks_h = blocks_along(image.size(2), w.pad_h, w.dilation_h, w.kernel_h, w.stride_h);
  const int64_t blocks_w = blocks_along(image.size(3), w.pad_w, w.dilation_w, w.kernel_w, w.stride_w);
  output.resize_({image.size(0), image.size(1) * w.kernel_h * w.kernel_w, blocks_h * blocks_w});
  launch("aten::im2col", /*gather=*/true, image, output, w, blocks_h, blocks_w);
  if (!batched) output.squeeze_(0);
}

void col2im_into(const at::Tensor& input, at::IntArrayRef output_size, at::IntArrayRef kernel_size,
                 at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride,
                 at::Tensor& output) {
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ",
              output_size.size());
  const Window w = window_of(kernel_size, dilation, padding, stride);
  at::native::col2im_shape_check(input, at::Tensor(), output_size[0], output_size[1], w.kernel_h,
                                 w.kernel_w, w.dilation_h, w.dilation_w, w.pad_h, w.pad_w,
                                 w.stride_h, w.stride_w);
  check_dtype(input, "col2im_out_cpu");
  const bool batched = input.dim() == 3;
  at::Tensor columns = batched ? input : input.unsqueeze(0);
  const int64_t planes = columns.size(1) / (w.kernel_h * w.kernel_w);
  output.resize_({columns.size(0), planes, output_size[0], output_size[1]});
  output.zero_();
  const int64_t blocks_h = blocks_along(output_size[0], w.pad_h, w.dilation_h, w.kernel_h, w.stride_h);
  const int64_t blocks_w = blocks_along(output_size[1], w.pad_w, w.dilation_w, w.kernel_w, w.stride_w);
  launch("aten::col2im", /*gather=*/false, output, columns, w, blocks_h, blocks_w);
  if (!batched) output.squeeze_(0);
}

}  // namespace

at::Tensor im2col(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                  at::IntArrayRef padding, at::IntArrayRef stride) {
  if (self.is_complex()) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::im2col>::call(
        self, kernel_size, dilation, padding, stride);
  }
  at::Tensor output = at::empty({0}, self.options());
  im2col_into(self, kernel_size, dilation, padding, stride, output);
  return output;
}

at::Tensor& im2col_out(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                       at::IntArrayRef padding, at::IntArrayRef stride, at::Tensor& out) {
  if (self.is_complex()) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::im2col_out>::call(
        self, kernel_size, dilation, padding, stride, out);
    return out;
  }
  im2col_into(self, kernel_size, dilation, padding, stride, out);
  return out;
}

at::Tensor col2im(const at::Tensor& self, at::IntArrayRef output_size, at::IntArrayRef kernel_size,
                  at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride) {
  if (self.is_complex()) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::col2im>::call(
        self, output_size, kernel_size, dilation, padding, stride);
  }
  at::Tensor output = at::empty({0}, self.options());
  col2im_into(self, output_size, kernel_size, dilation, padding, stride, output);
  return output;
}

at::Tensor& col2im_out(const at::Tensor& self, at::IntArrayRef output_size,
                       at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                       at::IntArrayRef padding, at::IntArrayRef stride, at::Tensor& out) {
  if (self.is_complex()) {
    at::native::call_fallback_fn<&cpu_fallback, at::_ops::col2im_out>::call(
        self, output_size, kernel_size, dilation, padding, stride, out);
    return out;
  }
  col2im_into(self, output_size, kernel_size, dilation, padding, stride, out);
  return out;
}

}  // namespace kiln::torch_integration::compiled
