// sum, mean, amax and amin: output shape and dtype as ATen's meta functions
// compute them, then one compiled reduction. Accumulation is in the output's
// compute dtype (float32 for half types), as on the CPU.
#include "kiln/aten/compiled/reduction_ops.h"

#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>

#include "kiln/aten/compiled/ir_dtype.h"
#include "kiln/aten/compiled/reduction.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ReduceOp;

// The reduced dims (wrapped, sorted) for `dims`; every dim when empty or absent.
c10::DimVector reduced_dims(const at::Tensor& self, at::OptionalIntArrayRef dims) {
  at::native::DimMask mask = at::native::make_dim_mask(dims, self.dim());
  c10::DimVector result;
  for (int64_t dim = 0; dim < std::max<int64_t>(self.dim(), 1); ++dim) {
    if (dim < self.dim() && mask[dim]) result.push_back(dim);
  }
  return result;
}

void resize_output(at::Tensor& out, const at::Tensor& self, c10::IntArrayRef reduced, bool keepdim) {
  c10::DimVector shape(self.sizes().begin(), self.sizes().end());
  for (auto it = reduced.rbegin(); it != reduced.rend(); ++it) {
    if (keepdim) shape[*it] = 1;
    else shape.erase(shape.begin() + *it);
  }
  at::native::resize_output(out, shape);
}

// Folds `self` over `dims` into `out` with `op`; the element is cast to the
// output dtype first. `divide_by_count` makes a mean.
void reduce_into(const char* op_name, const char* key, ReduceOp op, const at::Tensor& self,
                 at::OptionalIntArrayRef dims, bool keepdim, at::Tensor& out, bool divide_by_count) {
  c10::DimVector reduced = reduced_dims(self, dims);
  resize_output(out, self, reduced, keepdim);
  if (out.numel() == 0) return;
  at::Tensor input = self.dim() == 0 ? self.view({1}) : self;
  at::Tensor target = keepdim_view(self.dim() == 0 ? out.view({1}) : out, input.dim(), reduced);
  if (self.dim() == 0) reduced = {0};
  int64_t count = 1;
  for (int64_t dim : reduced) count *= input.size(dim);
  ReductionSpec spec;
  spec.op = op;
  ir::DType output_dtype = require_ir_dtype(out.scalar_type(), op_name);
  spec.element = [output_dtype](ReductionContext& context) {
    return context.builder.cast(context.inputs[0], ir::compute_dtype(output_dtype));
  };
  c10::SmallVector<c10::Scalar, 1> scalars;
  if (divide_by_count) {
    scalars.push_back(c10::Scalar(static_cast<double>(count)));
    spec.epilogue = [output_dtype](ReductionContext& context) -> std::vector<ir::ValueId> {
      ir::Builder& builder = context.builder;
      ir::ValueId divisor = builder.cast(context.scalars[0], ir::compute_dtype(output_dtype));
      return {builder.binary(OpCode::kDivide, builder.accumulator(), divisor)};
    };
  }
  launch_reduction(op_name, key, {input}, {target}, reduced, scalars, spec);
}

at::Tensor empty_result(const at::Tensor& self, at::ScalarType dtype) {
  return at::empty({0}, self.options().dtype(dtype));
}

void check_min_max_input(const at::Tensor& self, at::IntArrayRef dims, const char* name) {
  if (self.numel() != 0) return;
  c10::DimVector reduced = reduced_dims(self, dims);
  for (int64_t dim : reduced) {
    TORCH_CHECK_INDEX(self.size(dim) != 0, name, "(): Expected reduction dim ", dim,
                      " to have non-zero size.");
  }
  TORCH_CHECK(self.dim() != 0 || self.numel() != 0, name, "(): Expected a non-empty tensor");
}

}  // namespace

at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, at::Tensor& out) {
  TORCH_CHECK(!dtype.has_value() || *dtype == out.scalar_type(), "Expected out tensor to have dtype ",
              *dtype, ", but got ", out.scalar_type(), " instead");
  reduce_into("aten::sum.IntList_out", "sum", ReduceOp::kSum, self, dim, keepdim, out, false);
  return out;
}

at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
               std::optional<at::ScalarType> dtype) {
  at::Tensor out = empty_result(self, at::native::get_dtype_from_self(self, dtype, true));
  reduce_into("aten::sum.dim_IntList", "sum", ReduceOp::kSum, self, dim, keepdim, out, false);
  return out;
}

at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<at::ScalarType> dtype, at::Tensor& out) {
  at::ScalarType result = at::native::get_dtype_from_self(self, dtype, false);
  TORCH_CHECK(at::isFloatingType(result) || at::isComplexType(result),
              "mean(): could not infer output dtype. ",
              (dtype.has_value() ? "Optional" : "Input"), " dtype must be either a floating point "
              "or complex dtype. Got: ", result);
  TORCH_CHECK(out.scalar_type() == result, "Expected out tensor to have dtype ", result,
              ", but got ", out.scalar_type(), " instead");
  reduce_into("aten::mean.out", "mean", ReduceOp::kSum, self, dim, keepdim, out, true);
  return out;
}

at::Tensor mean(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                std::optional<at::ScalarType> dtype) {
  at::ScalarType result = at::native::get_dtype_from_self(self, dtype, false);
  at::Tensor out = empty_result(self, result);
  return mean_out(self, dim, keepdim, dtype, out);
}

at::Tensor& amax_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  check_min_max_input(self, dim, "amax");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "Expected the dtype for input and out to match, "
              "but got ", self.scalar_type(), " for input's dtype and ", out.scalar_type(),
              " for out's dtype.");
  reduce_into("aten::amax.out", "amax", ReduceOp::kMax, self, dim, keepdim, out, false);
  return out;
}

at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  at::Tensor out = empty_result(self, self.scalar_type());
  return amax_out(self, dim, keepdim, out);
}

at::Tensor& amin_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  check_min_max_input(self, dim, "amin");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "Expected the dtype for input and out to match, "
              "but got ", self.scalar_type(), " for input's dtype and ", out.scalar_type(),
              " for out's dtype.");
  reduce_into("aten::amin.out", "amin", ReduceOp::kMin, self, dim, keepdim, out, false);
  return out;
}

at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  at::Tensor out = empty_result(self, self.scalar_type());
  return amin_out(self, dim, keepdim, out);
}

}  // namespace kiln::torch_integration::compiled
