// max, min, argmax, argmin and aminmax. The values come from kMax/kMin
// reductions (NaN-propagating); values with indices from one kArgMax/kArgMin
// kernel whose epilogue stores both the accumulator and its index.
#include "kiln/aten/compiled/reduction/index_reduction_ops.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/aminmax_meta.h>
#include <ATen/ops/argmax_meta.h>
#include <ATen/ops/argmin_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_meta.h>
#include <ATen/ops/min_meta.h>

#include "kiln/aten/compiled/launch/reduction_support.h"
#include "kiln/aten/compiled/launch/structured_run.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::ReduceOp;

// The extreme value (kMax or kMin) of `self` over `reduced`, computed in the
// input's dtype and converted on store.
void select_extreme(const char* op_name, const char* key, ReduceOp op, const at::Tensor& self,
                    c10::IntArrayRef reduced, const at::Tensor& out) {
  ReductionSpec spec;
  spec.op = op;
  spec.element = [](ReductionContext& context) { return context.inputs[0]; };
  reduce(op_name, key, self, reduced, {out}, {}, {}, spec);
}

// The extreme value and/or its index (kArgMax or kArgMin) over `reduced`; the
// index counts in the reduced dims' logical order. `values` may be undefined.
void select_with_index(const char* op_name, const char* key, ReduceOp op, const at::Tensor& self,
                       c10::IntArrayRef reduced, const at::Tensor& values,
                       const at::Tensor& indices) {
  const bool with_values = values.defined();
  ReductionSpec spec;
  spec.op = op;
  spec.logical_order = true;
  spec.element = [](ReductionContext& context) { return context.inputs[0]; };
  spec.epilogue = [with_values](ReductionContext& context) -> std::vector<ir::ValueId> {
    ir::Builder& builder = context.builder;
    if (!with_values) return {builder.accumulator_index()};
    return {builder.accumulator(), builder.accumulator_index()};
  };
  if (with_values) {
    reduce(op_name, key, self, reduced, {values, indices}, {}, {}, spec);
  } else {
    reduce(op_name, key, self, reduced, {indices}, {}, {}, spec);
  }
}

at::Tensor all_of(const char* name, const char* op_name, ReduceOp op, const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, name,
              "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
              "reduction dim with the 'dim' argument.");
  at::Tensor out = at::empty({}, self.options());
  select_extreme(op_name, name, op, self, reduced_dims(self, std::nullopt), out);
  return out;
}

// ATen's max.unary_out and min.unary_out: any out dtype the input casts to; an
// empty input leaves the reduction's identity (-inf for max of floats).
at::Tensor& all_of_out(const char* name, const char* op_name, ReduceOp op, const at::Tensor& self,
                       at::Tensor& out) {
  TORCH_CHECK(self.device() == out.device(), "Expected self.device() == out.device() to be true, "
              "but got false.  (Could this error message be improved?  If so, please report an "
              "enhancement request to PyTorch.)");
  TORCH_CHECK(at::canCast(self.scalar_type(), out.scalar_type()),
              "Expected canCast( typeMetaToScalarType(self.dtype()), "
              "typeMetaToScalarType(out.dtype())) to be true, but got false.  (Could this error "
              "message be improved?  If so, please report an enhancement request to PyTorch.)");
  at::native::resize_output(out, {});
  select_extreme(op_name, name, op, self, reduced_dims(self, std::nullopt), out);
  return out;
}

template <typename Meta>
std::tuple<at::Tensor, at::Tensor> with_index(const char* op_name, const char* key, ReduceOp op,
                                              const at::Tensor& self, int64_t dim, bool keepdim) {
  // Two outputs, and the meta function's wrapped dim is needed: not structured().
  StructuredOutputs<Meta, 2> meta;
  int64_t wrapped = meta.meta(self, dim, keepdim).dim;
  select_with_index(op_name, key, op, self, reduced_dims(self, wrapped), meta.output(0),
                    meta.output(1));
  return {meta.output(0), meta.output(1)};
}

template <typename Meta>
std::tuple<at::Tensor&, at::Tensor&> with_index_out(const char* op_name, const char* key,
                                                    ReduceOp op, const at::Tensor& self,
                                                    int64_t dim, bool keepdim, at::Tensor& values,
                                                    at::Tensor& indices) {
  // Two outputs, and the meta function's wrapped dim is needed: not structured().
  StructuredOutputs<Meta, 2> meta({values, indices});
  int64_t wrapped = meta.meta(self, dim, keepdim).dim;
  select_with_index(op_name, key, op, self, reduced_dims(self, wrapped), values, indices);
  return {values, indices};
}

// argmax/argmin: without a dim, the index into the flattened tensor.
void arg_into(const char* name, const char* op_name, ReduceOp op, const at::Tensor& self,
              std::optional<int64_t> dim, const at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() != at::kBool, name, "(): does not support bool input");
  c10::DimVector reduced = dim.has_value() ? reduced_dims(self, *dim) : reduced_dims(self, std::nullopt);
  select_with_index(op_name, name, op, self, reduced, at::Tensor(), out);
}

}  // namespace

at::Tensor max(const at::Tensor& self) { return all_of("max", "aten::max", ReduceOp::kMax, self); }
at::Tensor min(const at::Tensor& self) { return all_of("min", "aten::min", ReduceOp::kMin, self); }

at::Tensor& max_unary_out(const at::Tensor& self, at::Tensor& out) {
  return all_of_out("max", "aten::max.unary_out", ReduceOp::kMax, self, out);
}

at::Tensor& min_unary_out(const at::Tensor& self, at::Tensor& out) {
  return all_of_out("min", "aten::min.unary_out", ReduceOp::kMin, self, out);
}

std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return with_index<at::meta::structured_max_dim>("aten::max.dim", "max_dim", ReduceOp::kArgMax,
                                                  self, dim, keepdim);
}

std::tuple<at::Tensor&, at::Tensor&> max_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  return with_index_out<at::meta::structured_max_dim>("aten::max.dim_max", "max_dim",
                                                      ReduceOp::kArgMax, self, dim, keepdim,
                                                      values, indices);
}

std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return with_index<at::meta::structured_min_dim>("aten::min.dim", "min_dim", ReduceOp::kArgMin,
                                                  self, dim, keepdim);
}

std::tuple<at::Tensor&, at::Tensor&> min_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  return with_index_out<at::meta::structured_min_dim>("aten::min.dim_min", "min_dim",
                                                      ReduceOp::kArgMin, self, dim, keepdim,
                                                      values, indices);
}

at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return structured<at::meta::structured_argmax>(nullptr, [&](const at::Tensor& result) {
    arg_into("argmax", "aten::argmax", ReduceOp::kArgMax, self, dim, result);
  }, self, dim, keepdim);
}

at::Tensor& argmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       at::Tensor& out) {
  structured<at::meta::structured_argmax>(&out, [&](const at::Tensor& result) {
    arg_into("argmax", "aten::argmax.out", ReduceOp::kArgMax, self, dim, result);
  }, self, dim, keepdim);
  return out;
}

at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return structured<at::meta::structured_argmin>(nullptr, [&](const at::Tensor& result) {
    arg_into("argmin", "aten::argmin", ReduceOp::kArgMin, self, dim, result);
  }, self, dim, keepdim);
}

at::Tensor& argmin_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       at::Tensor& out) {
  structured<at::meta::structured_argmin>(&out, [&](const at::Tensor& result) {
    arg_into("argmin", "aten::argmin.out", ReduceOp::kArgMin, self, dim, result);
  }, self, dim, keepdim);
  return out;
}

// aminmax: two reductions (one kernel has one accumulator).
namespace {

void aminmax_into(const char* op_name, const at::Tensor& self, std::optional<int64_t> dim,
                  const at::Tensor& min, const at::Tensor& max) {
  c10::DimVector reduced = dim.has_value() ? reduced_dims(self, *dim) : reduced_dims(self, std::nullopt);
  select_extreme(op_name, "min", ReduceOp::kMin, self, reduced, min);
  select_extreme(op_name, "max", ReduceOp::kMax, self, reduced, max);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> aminmax(const at::Tensor& self, std::optional<int64_t> dim,
                                           bool keepdim) {
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_aminmax, 2> meta;
  meta.meta(self, dim, keepdim);
  aminmax_into("aten::aminmax", self, dim, meta.output(0), meta.output(1));
  return {meta.output(0), meta.output(1)};
}

std::tuple<at::Tensor&, at::Tensor&> aminmax_out(const at::Tensor& self, std::optional<int64_t> dim,
                                                 bool keepdim, at::Tensor& min, at::Tensor& max) {
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_aminmax, 2> meta({min, max});
  meta.meta(self, dim, keepdim);
  aminmax_into("aten::aminmax.out", self, dim, min, max);
  return {min, max};
}

}  // namespace kiln::torch_integration::compiled
