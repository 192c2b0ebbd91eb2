// The folding reductions: ATen's meta function (or, for the ops without one,
// its checks) sizes the output, then one compiled reduction fills it.
#include "kiln/aten/compiled/reduction/reduction_ops.h"

#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/all_meta.h>
#include <ATen/ops/amax_meta.h>
#include <ATen/ops/amin_meta.h>
#include <ATen/ops/any_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mean_meta.h>
#include <ATen/ops/prod_meta.h>
#include <ATen/ops/sum_meta.h>

#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/reduction_support.h"
#include "kiln/aten/compiled/launch/structured_run.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ReduceOp;

// Folds `self` over `reduced` into `out` with `op`, each element converted to
// the output dtype first. `divide_by_count` makes a mean.
void fold(const char* op_name, const char* key, ReduceOp op, const at::Tensor& self,
          c10::IntArrayRef reduced, const at::Tensor& out, bool divide_by_count = false) {
  ir::DType output_dtype = require_ir_dtype(out.scalar_type(), op_name);
  ReductionSpec spec;
  spec.op = op;
  spec.element = [output_dtype](ReductionContext& context) {
    return converted_input(context, 0, output_dtype);
  };
  c10::SmallVector<c10::Scalar, 1> scalars;
  if (divide_by_count) {
    scalars.push_back(c10::Scalar(static_cast<double>(reduced_count(self, reduced))));
    spec.epilogue = [output_dtype](ReductionContext& context) -> std::vector<ir::ValueId> {
      ir::Builder& builder = context.builder;
      ir::ValueId divisor = builder.cast(context.scalars[0], ir::compute_dtype(output_dtype));
      return {builder.binary(OpCode::kDivide, builder.accumulator(), divisor)};
    };
  }
  reduce(op_name, key, self, reduced, {out}, {}, scalars, spec);
}

// nansum: NaNs (after the conversion to the output dtype) count as zero.
void fold_skipping_nan(const char* op_name, const at::Tensor& self, c10::IntArrayRef reduced,
                       const at::Tensor& out) {
  ir::DType output_dtype = require_ir_dtype(out.scalar_type(), op_name);
  ReductionSpec spec;
  spec.op = ReduceOp::kSum;
  spec.element = [output_dtype](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ir::ValueId value = converted_input(context, 0, output_dtype);
    ir::ValueId zero = builder.constant(0.0, output_dtype);
    return builder.select(builder.unary(OpCode::kIsNan, value), zero, value);
  };
  reduce(op_name, "nansum", self, reduced, {out}, {}, {}, spec);
}

// any (kAny) and all (kAll) into a bool or uint8 `out`. As on the CPU, a
// tensor of more than one element is converted to the output dtype before it
// is tested against zero (so 0.5 is false for a uint8 out=, true for bool),
// and empty and one-element tensors are tested directly.
void fold_logical(const char* op_name, ReduceOp op, const at::Tensor& self,
                  at::OptionalIntArrayRef dims, const at::Tensor& out) {
  c10::DimVector reduced = reduced_dims(self, dims, /*allow_empty_dims=*/true);
  bool through_byte = out.scalar_type() == at::kByte && self.scalar_type() != at::kByte &&
                      self.numel() > 1;
  ReductionSpec spec;
  spec.op = op;
  spec.element = [through_byte](ReductionContext& context) {
    ir::ValueId value = through_byte ? converted_input(context, 0, ir::DType::kUInt8)
                                     : context.inputs[0];
    return context.builder.cast(value, ir::DType::kBool);
  };
  const char* key = op == ReduceOp::kAny ? (through_byte ? "any_u8" : "any")
                                         : (through_byte ? "all_u8" : "all");
  if (out.scalar_type() == at::kBool) {
    reduce(op_name, key, self, reduced, {out}, {}, {}, spec);
    return;
  }
  // A uint8 result goes through bool: launch_reduction's two-stage split of a
  // large reduction keeps its partial results in the output's dtype, and
  // any/all fold bool values only.
  at::Tensor result = at::empty(out.sizes(), out.options().dtype(at::kBool));
  reduce(op_name, key, self, reduced, {result}, {}, {}, spec);
  convert_into(op_name, out, result);
}

}  // namespace

at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, at::Tensor& out) {
  structured<at::meta::structured_sum_dim_IntList>(&out, [&](const at::Tensor& result) {
    fold("aten::sum.IntList_out", "sum", ReduceOp::kSum, self, reduced_dims(self, dim), result);
  }, self, dim, keepdim, dtype);
  return out;
}

at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
               std::optional<at::ScalarType> dtype) {
  return structured<at::meta::structured_sum_dim_IntList>(nullptr, [&](const at::Tensor& result) {
    fold("aten::sum.dim_IntList", "sum", ReduceOp::kSum, self, reduced_dims(self, dim), result);
  }, self, dim, keepdim, dtype);
}

namespace {

// The mean into `result`. The CPU's mean into a float16/bfloat16 result of
// another input dtype (out= or dtype=) sums and divides in float32 and
// rounds the mean once; converting the input first overflowed (found by
// tests/python/op_fuzz.py).
void mean_into(const char* op_name, const at::Tensor& self, at::OptionalIntArrayRef dim,
               const at::Tensor& result) {
  if ((result.scalar_type() == at::kHalf || result.scalar_type() == at::kBFloat16) &&
      self.scalar_type() != result.scalar_type()) {
    at::Tensor wide = at::empty(result.sizes(), result.options().dtype(at::kFloat));
    fold(op_name, "mean", ReduceOp::kSum, self, reduced_dims(self, dim), wide, true);
    convert_into(op_name, result, wide);
    return;
  }
  fold(op_name, "mean", ReduceOp::kSum, self, reduced_dims(self, dim), result, true);
}

}  // namespace

at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<at::ScalarType> dtype, at::Tensor& out) {
  structured<at::meta::structured_mean_dim>(&out, [&](const at::Tensor& result) {
    // The CPU sums into `out` and divides it in place: an integral or bool
    // out= cannot take the quotient (found by tests/python/op_fuzz.py).
    TORCH_CHECK(at::isFloatingType(result.scalar_type()) || at::isComplexType(result.scalar_type()),
                "result type Float can't be cast to the desired output type ", result.scalar_type());
    mean_into("aten::mean.out", self, dim, result);
  }, self, dim, keepdim, dtype);
  return out;
}

at::Tensor mean(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                std::optional<at::ScalarType> dtype) {
  return structured<at::meta::structured_mean_dim>(nullptr, [&](const at::Tensor& result) {
    mean_into("aten::mean.dim", self, dim, result);
  }, self, dim, keepdim, dtype);
}

at::Tensor prod(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  at::Tensor out =
      at::empty({}, self.options().dtype(at::native::get_dtype_from_self(self, dtype, true)));
  fold("aten::prod", "prod", ReduceOp::kProduct, self, reduced_dims(self, {}), out);
  return out;
}

at::Tensor& prod_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                         std::optional<at::ScalarType> dtype, at::Tensor& out) {
  structured<at::meta::structured_prod_dim_int>(&out, [&](const at::Tensor& result) {
    fold("aten::prod.int_out", "prod", ReduceOp::kProduct, self, reduced_dims(self, dim), result);
  }, self, dim, keepdim, dtype);
  return out;
}

at::Tensor prod_dim(const at::Tensor& self, int64_t dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  return structured<at::meta::structured_prod_dim_int>(nullptr, [&](const at::Tensor& result) {
    fold("aten::prod.dim_int", "prod", ReduceOp::kProduct, self, reduced_dims(self, dim), result);
  }, self, dim, keepdim, dtype);
}

// nansum has no meta function: these are the checks of ATen's nansum_out.
at::Tensor& nansum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, at::Tensor& out) {
  // Integers have no NaN: ATen hands them to sum.
  if (at::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    return sum_out(self, dim, keepdim, dtype, out);
  }
  at::ScalarType result = at::native::get_dtype_from_result(out, dtype);
  TORCH_CHECK(out.scalar_type() == result, "nansum: provided dtype must match dtype of result. Got ",
              c10::toString(out.scalar_type()), " and ", c10::toString(result), ".");
  c10::DimVector reduced = reduced_dims(self, dim);
  at::native::resize_output(out, reduced_shape(self, reduced, keepdim));
  // The CPU kernel dispatches on the result's dtype, floating types only, once
  // there is something to sum (found by tests/python/op_fuzz.py).
  TORCH_CHECK_NOT_IMPLEMENTED(self.numel() == 0 || at::isFloatingType(out.scalar_type()) ||
                                  at::isComplexType(out.scalar_type()),
                              "\"nansum_cpu\" not implemented for '", c10::toString(out.scalar_type()), "'");
  fold_skipping_nan("aten::nansum.out", self, reduced, out);
  return out;
}

at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype) {
  at::ScalarType result = at::native::get_dtype_from_self(self, dtype, true);
  c10::DimVector reduced = reduced_dims(self, dim);
  at::Tensor out = at::empty(reduced_shape(self, reduced, keepdim), self.options().dtype(result));
  return nansum_out(self, dim, keepdim, result, out);
}

// ATen's CPU kernel is (self != 0).sum(dim): int64, no keepdim, and an empty
// dim list counts everything.
at::Tensor count_nonzero(const at::Tensor& self, at::IntArrayRef dim) {
  c10::DimVector reduced = reduced_dims(self, dim);
  at::Tensor out = at::empty(reduced_shape(self, reduced, false), self.options().dtype(at::kLong));
  ReductionSpec spec;
  spec.op = ReduceOp::kSum;
  spec.element = [](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    return builder.cast(builder.cast(context.inputs[0], ir::DType::kBool), ir::DType::kInt64);
  };
  reduce("aten::count_nonzero.dim_IntList", "count_nonzero", self, reduced, {out}, {}, {}, spec);
  return out;
}

at::Tensor& amax_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  structured<at::meta::structured_amax>(&out, [&](const at::Tensor& result) {
    fold("aten::amax.out", "amax", ReduceOp::kMax, self, reduced_dims(self, dim), result);
  }, self, dim, keepdim);
  return out;
}

at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return structured<at::meta::structured_amax>(nullptr, [&](const at::Tensor& result) {
    fold("aten::amax", "amax", ReduceOp::kMax, self, reduced_dims(self, dim), result);
  }, self, dim, keepdim);
}

at::Tensor& amin_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  structured<at::meta::structured_amin>(&out, [&](const at::Tensor& result) {
    fold("aten::amin.out", "amin", ReduceOp::kMin, self, reduced_dims(self, dim), result);
  }, self, dim, keepdim);
  return out;
}

at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return structured<at::meta::structured_amin>(nullptr, [&](const at::Tensor& result) {
    fold("aten::amin", "amin", ReduceOp::kMin, self, reduced_dims(self, dim), result);
  }, self, dim, keepdim);
}

// any and all, every overload: the meta function, then fold_logical.
#define KILN_DEFINE_LOGICAL(name, op)                                                              \
  at::Tensor name(const at::Tensor& self) {                                                        \
    return structured<at::meta::structured_##name>(nullptr, [&](const at::Tensor& result) {        \
      fold_logical("aten::" #name, op, self, std::nullopt, result);                                \
    }, self);                                                                                      \
  }                                                                                                \
  at::Tensor& name##_out(const at::Tensor& self, at::Tensor& out) {                                \
    structured<at::meta::structured_##name>(&out, [&](const at::Tensor& result) {                  \
      fold_logical("aten::" #name ".all_out", op, self, std::nullopt, result);                     \
    }, self);                                                                                      \
    return out;                                                                                    \
  }                                                                                                \
  at::Tensor name##_dim(const at::Tensor& self, int64_t dim, bool keepdim) {                       \
    return structured<at::meta::structured_##name##_dim>(nullptr, [&](const at::Tensor& result) {  \
      fold_logical("aten::" #name ".dim", op, self, dim, result);                                  \
    }, self, dim, keepdim);                                                                        \
  }                                                                                                \
  at::Tensor& name##_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) { \
    structured<at::meta::structured_##name##_dim>(&out, [&](const at::Tensor& result) {            \
      fold_logical("aten::" #name ".out", op, self, dim, result);                                  \
    }, self, dim, keepdim);                                                                        \
    return out;                                                                                    \
  }                                                                                                \
  at::Tensor name##_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {      \
    return structured<at::meta::structured_##name##_dims>(nullptr, [&](const at::Tensor& result) { \
      fold_logical("aten::" #name ".dims", op, self, dim, result);                                 \
    }, self, dim, keepdim);                                                                        \
  }                                                                                                \
  at::Tensor& name##_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,   \
                              at::Tensor& out) {                                                   \
    structured<at::meta::structured_##name##_dims>(&out, [&](const at::Tensor& result) {           \
      fold_logical("aten::" #name ".dims_out", op, self, dim, result);                             \
    }, self, dim, keepdim);                                                                        \
    return out;                                                                                    \
  }

KILN_DEFINE_LOGICAL(any, ReduceOp::kAny)
KILN_DEFINE_LOGICAL(all, ReduceOp::kAll)

#undef KILN_DEFINE_LOGICAL

}  // namespace kiln::torch_integration::compiled
