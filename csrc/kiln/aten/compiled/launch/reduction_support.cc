#include "kiln/aten/compiled/launch/reduction_support.h"

#include <ATen/TensorIterator.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include "kiln/aten/compiled/launch/pointwise.h"

namespace kiln::torch_integration::compiled {

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
