#include "kiln/aten/compiled/nn/norm/normalization_support.h"

#include <ATen/ops/empty.h>

#include "kiln/aten/compiled/launch/elementwise.h"

namespace kiln::torch_integration::compiled::normalization {

// Statistics accumulate in float32, or float64 for float64 inputs.
at::ScalarType accumulate_type(at::ScalarType type) {
  return type == at::kDouble ? at::kDouble : at::kFloat;
}

DType compute_of(at::ScalarType type) {
  return type == at::kDouble ? DType::kFloat64 : DType::kFloat32;
}

const at::Tensor& value_or_undefined(const std::optional<at::Tensor>& tensor) {
  static const at::Tensor undefined;
  return tensor.has_value() ? *tensor : undefined;
}

void check_floating(const at::Tensor& input, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(input.scalar_type()), "\"", kernel,
                              "\" not implemented for '", c10::toString(input.scalar_type()), "'");
}

// `result` when it already has the accumulate dtype, else a buffer of its
// shape that does: the unrounded statistic later kernels read.
at::Tensor accumulate_buffer(const at::Tensor& result, at::ScalarType accumulate) {
  if (result.scalar_type() == accumulate) return result;
  return at::empty(result.sizes(), result.options().dtype(accumulate));
}

// A sum over `reduced` of `element`, finished by `finish` (identity when
// null) and stored into every tensor of `outputs` (keepdim views, or 1-D
// vectors placed along `vector_dim`).
void launch_sum(const char* op_name, std::string_view key, c10::ArrayRef<at::Tensor> inputs,
                c10::ArrayRef<at::Tensor> outputs, c10::IntArrayRef reduced,
                c10::ArrayRef<c10::Scalar> scalars, ElementFn element, FinishFn finish) {
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kSum;
  spec.element = std::move(element);
  const size_t count = outputs.size();
  spec.epilogue = [finish = std::move(finish), count](ReductionContext& context) {
    ValueId accumulator = context.builder.accumulator();
    if (finish) return finish(context, accumulator);
    return std::vector<ValueId>(count, accumulator);
  };
  launch_reduction(op_name, key, inputs, outputs, reduced, scalars, spec);
}

// Views of `tensors` (1-D, length input.size(dim)) as keepdim outputs of a
// reduction of a rank-`rank` tensor over every dim but `dim`.
at::Tensor channel_view(const at::Tensor& vector, int64_t rank, int64_t dim) {
  return along_dim(vector, rank, dim);
}

ValueId scalar_as(ReductionContext& context, int index, DType dtype) {
  return context.builder.cast(context.scalars[index], dtype);
}

// rstd = 1 / sqrt(mean((x - mean)^2) + eps) over `reduced`, into every tensor
// of `outputs`, as the CPU's layer and group norm compute it in `compute`.
// `mean_full` is the mean expanded to `input`'s shape.
void launch_rstd(const char* op_name, std::string_view key, const at::Tensor& input,
                 const at::Tensor& mean_full, c10::ArrayRef<at::Tensor> outputs,
                 c10::IntArrayRef reduced, const c10::Scalar& count, const c10::Scalar& eps,
                 DType compute) {
  const c10::Scalar scalars[] = {count, eps};
  launch_sum(op_name, key, {input, mean_full}, outputs, reduced, scalars,
             [compute](ReductionContext& context) {
               ir::Builder& builder = context.builder;
               ValueId deviation = builder.binary(OpCode::kSubtract, builder.cast(context.inputs[0], compute),
                                                  context.inputs[1]);
               return builder.binary(OpCode::kMultiply, deviation, deviation);
             },
             [compute, count = outputs.size()](ReductionContext& context, ValueId sum) {
               ir::Builder& builder = context.builder;
               ValueId var = builder.binary(OpCode::kDivide, sum, scalar_as(context, 0, compute));
               var = builder.binary(OpCode::kMaximum, var, builder.constant(0, compute));
               ValueId value = builder.unary(
                   OpCode::kRsqrt, builder.binary(OpCode::kAdd, var, scalar_as(context, 1, compute)));
               return std::vector<ValueId>(count, value);
             });
}

ValueId normalized_grad_input(ir::Builder& builder, ValueId g, ValueId x, ValueId mean, ValueId rstd, ValueId ds,
                              ValueId db, ValueId n) {
  ValueId rstd3 = builder.binary(OpCode::kMultiply, builder.binary(OpCode::kMultiply, rstd, rstd), rstd);
  ValueId b = builder.binary(
      OpCode::kDivide,
      builder.binary(OpCode::kMultiply,
                     builder.binary(OpCode::kSubtract, builder.binary(OpCode::kMultiply, db, mean), ds), rstd3),
      n);
  ValueId c = builder.binary(OpCode::kSubtract,
                             builder.unary(OpCode::kNegate, builder.binary(OpCode::kMultiply, b, mean)),
                             builder.binary(OpCode::kDivide, builder.binary(OpCode::kMultiply, db, rstd), n));
  ValueId result = builder.binary(OpCode::kAdd, builder.binary(OpCode::kMultiply, rstd, g),
                                  builder.binary(OpCode::kMultiply, b, x));
  return builder.binary(OpCode::kAdd, result, c);
}

// 1 / sqrt(var + eps), or 0 when both are 0 (ATen's InvStd).
ValueId inverse_std(ir::Builder& builder, ValueId var, ValueId eps) {
  ValueId zero = builder.constant(0, builder.dtype_of(var));
  ValueId result = builder.unary(OpCode::kRsqrt, builder.binary(OpCode::kAdd, var, eps));
  ValueId degenerate = builder.binary(OpCode::kLogicalAnd, builder.binary(OpCode::kEqual, var, zero),
                                      builder.binary(OpCode::kEqual, eps, zero));
  return builder.select(degenerate, zero, result);
}

c10::DimVector all_but(int64_t rank, int64_t kept) {
  c10::DimVector dims;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (dim != kept) dims.push_back(dim);
  }
  return dims;
}

c10::DimVector range_dims(int64_t begin, int64_t end) {
  c10::DimVector dims;
  for (int64_t dim = begin; dim < end; ++dim) dims.push_back(dim);
  return dims;
}

}  // namespace kiln::torch_integration::compiled::normalization
