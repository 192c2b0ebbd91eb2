#include "kiln/aten/compiled/reduction_support.h"

#include <ATen/TensorIterator.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include "kiln/aten/compiled/pointwise.h"

namespace kiln::torch_integration::compiled {

at::Tensor allocate_output(c10::IntArrayRef sizes, c10::IntArrayRef strides,
                           const c10::TensorOptions& options) {
  if (strides.empty()) return at::empty(sizes, options);
  return at::empty_strided(sizes, strides, options);
}

// The messages are the ones torchgen's generated CPU wrappers raise.
void resize_out(const at::Tensor& out, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                const c10::TensorOptions& options) {
  TORCH_CHECK(options.dtype() == out.dtype(), "Expected out tensor to have dtype ",
              options.dtype(), ", but got ", out.dtype(), " instead");
  TORCH_CHECK(options.device() == out.device(), "Expected out tensor to have device ",
              options.device(), ", but got ", out.device(), " instead");
  // The meta function's strides are advisory: an out= tensor that already has
  // the right size keeps its own.
  if (!at::native::resize_output(out, sizes)) return;
  if (!strides.empty()) {
    out.as_strided_(sizes, strides);
  } else if (options.memory_format_opt().has_value()) {
    out.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
  }
}

void check_in_place_target(const at::Tensor& self, c10::IntArrayRef sizes,
                           const c10::TensorOptions& options) {
  TORCH_CHECK(options.dtype() == self.dtype(), "Bad in-place call: input tensor dtype ",
              self.dtype(), " and output tensor dtype ", options.dtype(), " should match");
  TORCH_CHECK(options.device() == self.device(), "Bad in-place call: input tensor device ",
              self.device(), " and output tensor device ", options.device(), " should match");
  TORCH_CHECK(sizes == self.sizes(), "Bad in-place call: input tensor size ", self.sizes(),
              " and output tensor size ", sizes, " should match");
}

c10::DimVector reduced_dims(const at::Tensor& self, at::OptionalIntArrayRef dims,
                            bool allow_empty_dims) {
  at::native::DimMask mask = at::native::make_dim_mask(dims, self.dim(), allow_empty_dims);
  c10::DimVector result;
  for (int64_t dim = 0; dim < self.dim(); ++dim) {
    if (mask[dim]) result.push_back(dim);
  }
  return result;
}

c10::DimVector reduced_shape(const at::Tensor& self, c10::IntArrayRef reduced, bool keepdim) {
  c10::DimVector shape(self.sizes().begin(), self.sizes().end());
  for (auto it = reduced.rbegin(); it != reduced.rend(); ++it) {
    if (keepdim) {
      shape[*it] = 1;
    } else {
      shape.erase(shape.begin() + *it);
    }
  }
  return shape;
}

int64_t reduced_count(const at::Tensor& self, c10::IntArrayRef reduced) {
  int64_t count = 1;
  for (int64_t dim : reduced) count *= self.size(dim);
  return count;
}

void reduce(const char* op_name, std::string_view key, const at::Tensor& self,
            c10::IntArrayRef reduced, c10::ArrayRef<at::Tensor> outputs,
            c10::ArrayRef<at::Tensor> broadcast_inputs, c10::ArrayRef<c10::Scalar> scalars,
            const ReductionSpec& spec) {
  for (const at::Tensor& output : outputs) {
    if (output.numel() == 0) return;
  }
  // A 0-dim tensor reduces as a one-element vector (over its only dim, which
  // is the same as reducing nothing).
  const bool scalar = self.dim() == 0;
  at::Tensor input = scalar ? self.view({1}) : self;
  c10::DimVector dims = scalar ? c10::DimVector{0} : c10::DimVector(reduced.begin(), reduced.end());
  const int64_t rank = input.dim();
  auto keepdim_shaped = [&](const at::Tensor& tensor) {
    return keepdim_view(scalar ? tensor.view({1}) : tensor, rank, dims);
  };
  c10::SmallVector<at::Tensor, 4> inputs{input};
  for (const at::Tensor& tensor : broadcast_inputs) {
    inputs.push_back(keepdim_shaped(tensor).expand(input.sizes()));
  }
  c10::SmallVector<at::Tensor, 2> targets;
  for (const at::Tensor& output : outputs) targets.push_back(keepdim_shaped(output));
  launch_reduction(op_name, key, inputs, targets, dims, scalars, spec);
}

void convert_into(const char* op_name, const at::Tensor& out, const at::Tensor& source) {
  if (out.numel() == 0) return;
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(out)
                                .add_const_input(source)
                                .check_all_same_dtype(false)
                                .resize_outputs(false)
                                .build();
  launch_pointwise(op_name, "convert", iter, {},
                   [](PointwiseContext& context) -> std::vector<ir::ValueId> {
                     return {context.inputs[0]};
                   });
}

ir::ValueId converted_input(ReductionContext& context, int index, ir::DType dtype) {
  if (context.input_dtypes[index] == dtype) return context.inputs[index];
  return context.builder.cast(context.inputs[index], dtype);
}

}  // namespace kiln::torch_integration::compiled
