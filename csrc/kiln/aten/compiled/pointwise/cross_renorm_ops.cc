// linalg_cross and renorm: their meta functions' checks and output shapes
// (written out here: both metas derive from MetaBase, not TensorIteratorBase),
// then the CPU's computation as kiln kernels.
#include "kiln/aten/compiled/pointwise/cross_renorm_ops.h"

#include <ATen/AccumulateType.h>
#include <ATen/ExpandUtils.h>
#include <ATen/TensorIterator.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/mul.h>
#include <c10/core/ScalarType.h>

#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

// Inputs: a0, a1, a2, b0, b1, b2 (the three components of each operand);
// outputs: the three components of a x b. The CPU computes in the dtype
// itself, so for the half types each product and difference is rounded.
std::vector<ValueId> cross_body(PointwiseContext& c) {
  auto round = [&](ValueId value) { return c.builder.cast(value, c.common); };
  auto component = [&](int i, int j) {
    ValueId left = round(c.binary(OpCode::kMultiply, c.promoted(i), c.promoted(3 + j)));
    ValueId right = round(c.binary(OpCode::kMultiply, c.promoted(j), c.promoted(3 + i)));
    return c.binary(OpCode::kSubtract, left, right);
  };
  return {component(1, 2), component(2, 0), component(0, 1)};
}

at::Tensor& run_cross(const char* op_name, const at::Tensor& self, const at::Tensor& other,
                      int64_t dim, Target target, at::Tensor& out) {
  TORCH_CHECK(self.dim() == other.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  TORCH_CHECK(self.size(dim) == 3 && other.size(dim) == 3, "linalg.cross: inputs dimension ", dim,
              " must have length 3. Got ", self.size(dim), " and ", other.size(dim));
  at::DimVector sizes = at::infer_size_dimvector(self.sizes(), other.sizes());
  // The CPU's kernel reads `other` as the output's dtype.
  TORCH_CHECK(other.scalar_type() == self.scalar_type(), "expected scalar type ",
              self.scalar_type(), " but found ", other.scalar_type());
  check_dispatch_dtype("cross", self.scalar_type(), kNumericTypes);
  if (target == Target::kFunctional) {
    out = create_output(sizes, {}, self.options());
  } else {
    resize_out_output(out, sizes, {}, self.options());
  }
  int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  at::Tensor self_expanded = self.expand(sizes);
  at::Tensor other_expanded = other.expand(sizes);
  // The config borrows its tensors: the views must outlive it.
  at::Tensor views[9];
  for (int64_t i = 0; i < 3; ++i) {
    views[i] = out.select(wrapped, i);
    views[3 + i] = self_expanded.select(wrapped, i);
    views[6 + i] = other_expanded.select(wrapped, i);
  }
  at::TensorIteratorConfig config;
  for (int i = 0; i < 3; ++i) config.add_output(views[i]);
  for (int i = 3; i < 9; ++i) config.add_const_input(views[i]);
  at::TensorIterator iter = config.build();
  launch_pointwise(op_name, "cross", iter, {}, cross_body);
  return out;
}

// The scale from each norm (scalar 0 is maxnorm): maxnorm / (norm + 1e-7)
// where the norm exceeds maxnorm, else 1.
std::vector<ValueId> renorm_factor_body(PointwiseContext& c) {
  ValueId norm = c.promoted(0);
  ValueId maxnorm = c.scalar_as(0, c.common);
  ValueId scaled = c.binary(OpCode::kDivide, maxnorm, c.binary(OpCode::kAdd, norm, c.constant(1e-7)));
  return {c.builder.select(c.binary(OpCode::kGreater, norm, maxnorm), scaled, c.constant(1.0))};
}

void check_renorm(const at::Tensor& self, const c10::Scalar& p, const c10::Scalar& maxnorm) {
  TORCH_CHECK(!p.isComplex(), "renorm: p must be real-valued");
  TORCH_CHECK(p.toDouble() > 0.0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(!maxnorm.isComplex(), "renorm: maxnorm must be real-valued");
  TORCH_CHECK(maxnorm.toDouble() >= 0.0, "renorm: expected maxnorm to be >= 0 but got ",
              maxnorm.toDouble());
  TORCH_CHECK(self.dim() > 1, "renorm: input needs at least 2 dimensions, got ", self.dim(),
              " dimensions");
}

// Norms over every dim but `dim` (in float for the half types), the factor
// in the norms' dtype rounded to self's, then out = self * factor.
void run_renorm(const char* op_name, const at::Tensor& self, const c10::Scalar& p, int64_t dim,
                const c10::Scalar& maxnorm, const at::Tensor& out) {
  int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  at::DimVector reduce_dims;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != wrapped) reduce_dims.push_back(d);
  }
  c10::ScalarType type = self.scalar_type();
  c10::ScalarType accumulate = at::toAccumulateType(type, /*is_cuda=*/true);
  at::IntArrayRef dims(reduce_dims);
  at::Tensor norm = accumulate != type
                        ? at::linalg_vector_norm(self, p.toDouble(), dims, true, accumulate)
                        : at::linalg_vector_norm(self, p.toDouble(), dims, true);
  at::Tensor factor = accumulate == c10::toRealValueType(type) ? norm : at::empty(norm.sizes(), self.options());
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(factor)
                                .add_const_input(norm)
                                .set_check_mem_overlap(false)
                                .cast_common_dtype_to_outputs(true)
                                .build();
  c10::Scalar scalars[] = {scalar_as_opmath(maxnorm, iter.common_dtype())};
  launch_pointwise(op_name, "renorm_factor", iter, scalars, renorm_factor_body);
  at::mul_out(const_cast<at::Tensor&>(out), self, factor);
}

}  // namespace

at::Tensor linalg_cross(const at::Tensor& self, const at::Tensor& other, int64_t dim) {
  at::Tensor out;
  return run_cross("aten::linalg_cross", self, other, dim, Target::kFunctional, out);
}

at::Tensor& linalg_cross_out(const at::Tensor& self, const at::Tensor& other, int64_t dim,
                             at::Tensor& out) {
  return run_cross("aten::linalg_cross.out", self, other, dim, Target::kOut, out);
}

at::Tensor renorm(const at::Tensor& self, const c10::Scalar& p, int64_t dim,
                  const c10::Scalar& maxnorm) {
  check_renorm(self, p, maxnorm);
  at::Tensor out = create_output(self.sizes(), {}, self.options());
  run_renorm("aten::renorm", self, p, dim, maxnorm, out);
  return out;
}

at::Tensor& renorm_(at::Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm) {
  check_renorm(self, p, maxnorm);
  run_renorm("aten::renorm_", self, p, dim, maxnorm, self);
  return self;
}

at::Tensor& renorm_out(const at::Tensor& self, const c10::Scalar& p, int64_t dim,
                       const c10::Scalar& maxnorm, at::Tensor& out) {
  check_renorm(self, p, maxnorm);
  resize_out_output(out, self.sizes(), {}, self.options());
  run_renorm("aten::renorm.out", self, p, dim, maxnorm, out);
  return out;
}

}  // namespace kiln::torch_integration::compiled
