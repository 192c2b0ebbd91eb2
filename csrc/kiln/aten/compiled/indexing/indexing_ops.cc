#include "kiln/aten/compiled/indexing/indexing_ops.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ScatterGatherChecks.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <limits>
#include <string>

#include "kiln/aten/compiled/indexing/advanced_index.h"
#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/launch/index_checks.h"
#include "kiln/aten/compiled/launch/indexed_kernel.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;

// out[p] = source[p + sum of the terms' offsets] over `shape`.
void gather_kernel(const char* op_name, c10::IntArrayRef shape, const KernelOperand& out,
                   const KernelOperand& source, std::vector<IndexTerm> terms, bool wraps) {
  terms = fold_index_terms(op_name, shape, std::move(terms), wraps);
  std::vector<KernelOperand> inputs{source};
  std::vector<c10::Scalar> scalars;
  add_index_terms(terms, inputs, scalars);
  const int count = static_cast<int>(terms.size());
  std::string key = "gather" + std::to_string(count) + (wraps ? "w" : "");
  IndexedKernelSpec spec;
  spec.key = key;
  spec.body = [count, wraps](IndexedKernelContext& context) {
    if (count == 0) {
      context.builder.store(0, context.load(0));
      return;
    }
    IndexOffset offset = sum_index_offsets(context, 1, 0, count, wraps);
    context.builder.store(0, context.load_at(0, offset.offset));
  };
  launch_indexed_kernel(op_name, spec, shape, inputs, {out}, scalars);
}

void check_out_dtype(const at::Tensor& out, const at::Tensor& self) {
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
              self.dtype(), ", but got ", out.dtype(), " instead");
}

// Writes the elements of `self` where `mask` (broadcast together) is true
// into a fresh 1-D tensor, in row-major order: one compiled count, one
// synchronising read, one single-threaded compiled pass (as nonzero). An
// element not kept is written to a scratch slot past the result, outside its
// storage (fit_storage_to_result).
at::Tensor masked_select_compiled(const char* op_name, const at::Tensor& self,
                                  const at::Tensor& mask) {
  at::Tensor device_mask = on_device(mask, self);
  auto [expanded_mask, expanded_self] = at::expand_outplace(device_mask, self);
  at::Tensor values = *expanded_self;
  at::Tensor keep = *expanded_mask;
  if (values.is_contiguous() && keep.is_contiguous()) {
    values = values.reshape({-1});
    keep = keep.reshape({-1});
  }
  TORCH_CHECK(values.dim() <= ir::kMaxRank, op_name, ": the kiln device supports at most ",
              ir::kMaxRank, " dims for non-contiguous inputs, got ", values.dim());
  const int64_t count = count_nonzero(op_name, keep);
  if (count == 0) return at::empty({0}, self.options());
  at::Tensor buffer = at::empty({count + 1}, self.options());
  at::Tensor result = buffer.narrow(0, 0, count);
  at::Tensor counter = at::zeros({1}, self.options().dtype(at::kLong));
  c10::DimVector zeros(values.dim(), 0);
  IndexedKernelSpec spec;
  spec.key = "masked_select";
  spec.single_threaded = true;
  spec.logical_order = true;
  spec.body = [](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    ir::ValueId value = context.load(0);
    ir::ValueId selected = context.load(1);
    ir::ValueId seen = context.load(2);
    builder.store(0, builder.binary(OpCode::kAdd, seen, context.int64(selected)));
    builder.store_indexed(1, value, builder.select(selected, seen, context.scalars[0]), false);
  };
  c10::Scalar scalars[] = {count};
  launch_indexed_kernel(op_name, spec, values.sizes(),
                        {operand_of(values), operand_of(keep), operand_with_strides(counter, zeros)},
                        {operand_with_strides(counter, zeros), operand_with_strides(buffer, zeros)},
                        scalars);
  fit_storage_to_result(result);
  return result;
}

void run_index(const char* op_name, const AdvancedIndexPlan& plan, const at::Tensor& out) {
  // As index_put_: the CPU reads no index when the result is empty, so one
  // out of range is no error there (zeros(1, 0)[[1]]).
  if (c10::multiply_integers(plan.src.sizes()) == 0) return;
  check_advanced_index(op_name, plan);
  gather_kernel(op_name, plan.src.sizes(), operand_of(out), operand_of(plan.src), plan.terms,
                /*wraps=*/true);
}

}  // namespace

at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             at::Tensor& out) {
  const char* op_name = "aten::index_select.out";
  record_op(op_name, OpPath::kCompiled);
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t count = index.numel();
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(!(self.dim() == 0 && count != 1),
              "index_select(): Index to scalar can have only 1 value, got ", count, " value(s)");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(),
              "index_select(): self and result must have the same scalar type");
  check_same_device({self, out});
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, index);
  c10::DimVector sizes(self.sizes().begin(), self.sizes().end());
  if (self.dim() > 0) sizes[dim] = count;
  at::native::resize_output(out, sizes);
  if (count == 0) return out;
  at::Tensor device_index = on_device(index, self);
  // The CPU's checks (found by tests/python/op_fuzz.py): for self of rank 2
  // or more, an empty self (whose result is empty too) and the fast path for
  // dim 1 into a contiguous result check every index with a RuntimeError
  // naming it (an empty indexed dim first); other cases raise IndexError.
  const int64_t size = size_at(self, dim);
  const bool empty_self = self.dim() > 1 && self.numel() == 0;
  if (empty_self) TORCH_CHECK(size > 0, "index_select(): self indexing axis dim should be positive");
  if (empty_self || (self.dim() > 1 && dim == 1 && out.is_contiguous())) {
    check_index_bounds(op_name, device_index, {size, /*wraps=*/false}, ErrorType::kRuntimeError,
                       [size](int64_t index) {
                         return "INDICES element is out of DATA bounds, id=" + std::to_string(index) +
                                " axis_dim=" + std::to_string(size);
                       });
    if (empty_self) return out;
  } else {
    check_index_bounds(op_name, device_index, {size, /*wraps=*/false}, ErrorType::kIndexError,
                       [](int64_t) { return std::string("index out of range in self"); });
  }
  const int64_t rank = self.dim();
  c10::DimVector index_strides(rank, 0);
  if (rank > 0 && device_index.dim() == 1) index_strides[dim] = device_index.stride(0);
  gather_kernel(op_name, sizes, operand_of(out),
                operand_with_strides(self, base_strides(self, rank, dim)),
                {IndexTerm{operand_with_strides(device_index, index_strides), size_at(self, dim),
                           stride_at(self, dim)}},
                /*wraps=*/false);
  return out;
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return index_select_out(self, dim, index, out);
}

at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                       bool sparse_grad, at::Tensor& out) {
  const char* op_name = "aten::gather.out";
  record_op(op_name, OpPath::kCompiled);
  (void)sparse_grad;
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_out_dtype(out, self);
  check_same_device({self, out});
  at::native::resize_output(out, index.sizes());
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_partial_overlap(out, index);
  if (index.numel() == 0) return out;
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "gather(): Expected dtype int32/int64 for index");
  at::native::gather_shape_check(self, dim, index);
  at::Tensor device_index = on_device(index, self);
  const int64_t size = size_at(self, dim);
  check_index_bounds(op_name, device_index, {size, /*wraps=*/false}, ErrorType::kRuntimeError,
                     out_of_bounds_message(dim, size));
  gather_kernel(op_name, index.sizes(), operand_of(out),
                operand_with_strides(self, base_strides(self, index.dim(), dim)),
                {IndexTerm{operand_of(device_index), size, stride_at(self, dim)}},
                /*wraps=*/false);
  return out;
}

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  at::Tensor out = at::empty(index.sizes(), self.options());
  return gather_out(self, dim, index, sparse_grad, out);
}

at::Tensor& take_out(const at::Tensor& self, const at::Tensor& index, at::Tensor& out) {
  const char* op_name = "aten::take.out";
  record_op(op_name, OpPath::kCompiled);
  TORCH_CHECK(index.scalar_type() == at::kLong, "take(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == out.scalar_type(),
              "take(): self and out expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and out.dtype = ", out.scalar_type());
  TORCH_CHECK(self.device() == out.device() && index.device() == out.device(),
              "take(): self, index and out expected to be in the same device, but got self.device = ",
              self.device(), ", index.device = ", index.device(), ", and out.device = ", out.device());
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, self);
  TORCH_CHECK_INDEX(!(self.numel() == 0 && index.numel() != 0),
                    "take(): tried to take from an empty tensor");
  at::native::resize_output(out, index.sizes());
  if (index.numel() == 0) return out;
  const int64_t numel = self.numel();
  check_index_bounds(op_name, index, {numel, /*wraps=*/true}, ErrorType::kIndexError,
                     [numel](int64_t value) {
                       return "out of range: tried to access index " + std::to_string(value) +
                              " on a tensor of " + std::to_string(numel) + " elements.";
                     });
  at::Tensor flat = self.contiguous();
  gather_kernel(op_name, index.sizes(), operand_of(out),
                operand_with_strides(flat, c10::DimVector(index.dim(), 0)),
                {IndexTerm{operand_of(index), numel, 1}}, /*wraps=*/true);
  return out;
}

at::Tensor take(const at::Tensor& self, const at::Tensor& index) {
  at::Tensor out = at::empty(index.sizes(), self.options());
  return take_out(self, index, out);
}

at::Tensor index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  const char* op_name = "aten::index.Tensor";
  record_op(op_name, OpPath::kCompiled);
  AdvancedIndexPlan plan = plan_advanced_index(self, indices);
  at::Tensor out = at::empty(plan.src.sizes(), self.options());
  run_index(op_name, plan, out);
  return out;
}

at::Tensor& index_out(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                      at::Tensor& out) {
  const char* op_name = "aten::index.Tensor_out";
  record_op(op_name, OpPath::kCompiled);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index_out: self (", self.scalar_type(),
              ") and out (", out.scalar_type(), ") must have the same dtype");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  for (const std::optional<at::Tensor>& entry : indices) {
    if (entry.has_value() && entry->defined()) at::assert_no_overlap(out, *entry);
  }
  AdvancedIndexPlan plan = plan_advanced_index(self, indices);
  at::native::resize_output(out, plan.src.sizes());
  run_index(op_name, plan, out);
  return out;
}

at::Tensor nonzero(const at::Tensor& self) {
  const char* op_name = "aten::nonzero";
  record_op(op_name, OpPath::kCompiled);
  TORCH_CHECK(self.numel() < std::numeric_limits<int>::max(),
              "nonzero is not supported for tensors with more than INT_MAX elements, "
              "See https://github.com/pytorch/pytorch/issues/51871");
  return nonzero_compiled(op_name, self);
}

at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  const char* op_name = "aten::nonzero.out";
  record_op(op_name, OpPath::kCompiled);
  TORCH_CHECK(out.scalar_type() == at::kLong,
              "nonzero: Expected out tensor to have scalar type Long but got scalar type",
              out.scalar_type());
  TORCH_CHECK(self.device() == out.device(),
              "expected self and out to be on the same device, but got out on ", out.device(),
              " and self on ", self.device());
  at::Tensor result = nonzero_compiled(op_name, self);
  // As the CPU's: an out of the result's shape is written in place, with its
  // own strides; any other takes the result's storage and layout (after
  // resize_output's warning when it had elements).
  if (out.sizes() == result.sizes()) {
    if (result.numel() > 0) copy_tensor(op_name, out, result);
    return out;
  }
  at::native::resize_output_check(out, result.sizes());
  out.set_(result);
  return out;
}

at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  const char* op_name = "aten::masked_select.out";
  record_op(op_name, OpPath::kCompiled);
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(),
              "masked_select(): self and result must have the same scalar type");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, mask);
  at::Tensor result = masked_select_compiled(op_name, self, mask);
  at::native::resize_output(out, result.sizes());
  if (result.numel() > 0) copy_tensor(op_name, out, result);
  return out;
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  const char* op_name = "aten::masked_select";
  record_op(op_name, OpPath::kCompiled);
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  return masked_select_compiled(op_name, self, mask);
}

}  // namespace kiln::torch_integration::compiled
