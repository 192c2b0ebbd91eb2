#include "kiln/aten/compiled/indexing/scatter_ops.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ScatterGatherChecks.h>
#include <ATen/native/TensorAdvancedIndexingUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <limits>
#include <sstream>
#include <string>

#include "kiln/aten/compiled/indexing/advanced_index.h"
#include "kiln/aten/compiled/launch/index_checks.h"
#include "kiln/aten/compiled/launch/indexed_kernel.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/device_checks.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::DType;
using ir::OpCode;
using ir::ValueId;

enum class Reduce { kNone, kSum, kProd, kMean, kMax, kMin };

const char* reduce_name(Reduce reduce) {
  switch (reduce) {
    case Reduce::kNone: return "store";
    case Reduce::kSum: return "sum";
    case Reduce::kProd: return "prod";
    case Reduce::kMean: return "mean";
    case Reduce::kMax: return "max";
    case Reduce::kMin: return "min";
  }
  return "";
}

// scatter's reduce= ("add", "multiply") and scatter_reduce's ("sum", "prod",
// "mean", "amax", "amin"), with ATen's messages.
Reduce parse_reduce(c10::string_view reduce, bool scatter_reduce_names) {
  if (scatter_reduce_names) {
    if (reduce == "sum") return Reduce::kSum;
    if (reduce == "prod") return Reduce::kProd;
    if (reduce == "mean") return Reduce::kMean;
    if (reduce == "amax" || reduce == "max") return Reduce::kMax;
    if (reduce == "amin" || reduce == "min") return Reduce::kMin;
    TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
  }
  if (reduce == "add") return Reduce::kSum;
  if (reduce == "multiply") return Reduce::kProd;
  TORCH_CHECK(false, "reduce argument must be either add or multiply.");
}

// The identity a reduction starts from where include_self=False.
c10::Scalar identity(Reduce reduce, at::ScalarType type) {
  switch (reduce) {
    case Reduce::kSum:
    case Reduce::kMean:
    case Reduce::kNone: return c10::Scalar(int64_t{0});
    case Reduce::kProd: return c10::Scalar(int64_t{1});
    case Reduce::kMax:
    case Reduce::kMin: break;
  }
  bool max = reduce == Reduce::kMax;
  if (at::isFloatingType(type)) {
    return c10::Scalar(max ? -std::numeric_limits<double>::infinity()
                           : std::numeric_limits<double>::infinity());
  }
  switch (type) {
    case at::kBool: return c10::Scalar(!max);
    case at::kByte: return c10::Scalar(int64_t{max ? 0 : 255});
    case at::kChar: return c10::Scalar(int64_t{max ? -128 : 127});
    case at::kShort: return c10::Scalar(int64_t{max ? -32768 : 32767});
    case at::kInt:
      return c10::Scalar(int64_t{max ? std::numeric_limits<int32_t>::min()
                                     : std::numeric_limits<int32_t>::max()});
    default:
      return c10::Scalar(max ? std::numeric_limits<int64_t>::min()
                             : std::numeric_limits<int64_t>::max());
  }
}

// old (op) value for the reductions that read the old value.
ValueId combine(ir::Builder& builder, Reduce reduce, ValueId old, ValueId value) {
  bool is_bool = builder.dtype_of(old) == DType::kBool;
  switch (reduce) {
    case Reduce::kProd:
      return builder.binary(is_bool ? OpCode::kLogicalAnd : OpCode::kMultiply, old, value);
    case Reduce::kMax:
      return builder.binary(is_bool ? OpCode::kLogicalOr : OpCode::kMaximum, old, value);
    case Reduce::kMin:
      return builder.binary(is_bool ? OpCode::kLogicalAnd : OpCode::kMinimum, old, value);
    default: return value;
  }
}

bool reads_old_value(Reduce reduce) {
  return reduce == Reduce::kProd || reduce == Reduce::kMax || reduce == Reduce::kMin;
}

// Stores `value` (in the output's compute dtype) at offset.offset of output 0
// with `reduce`; `old_input` is the input aliasing the output (reads_old_value).
void store_reduced(IndexedKernelContext& context, Reduce reduce, ValueId value,
                   const IndexOffset& offset, int old_input) {
  ir::Builder& builder = context.builder;
  DType type = context.output_dtypes[0];
  switch (reduce) {
    case Reduce::kNone:
      builder.store_indexed(0, value, offset.offset, false);
      return;
    case Reduce::kSum:
    case Reduce::kMean: {
      ValueId zero = builder.constant(0, type);
      builder.store_indexed(0, builder.select(offset.valid, value, zero), offset.offset, true);
      return;
    }
    default: {
      ValueId old = context.load_at(old_input, offset.offset);
      ValueId updated = combine(builder, reduce, old, value);
      builder.store_indexed(0, builder.select(offset.valid, updated, old), offset.offset, false);
    }
  }
}

// out[... index[p] ...] (reduce)= src[p] or value, along `dim`, over index's
// shape.
void scatter_kernel(const char* op_name, const at::Tensor& out, int64_t dim,
                    const at::Tensor& index, const at::Tensor* src, const c10::Scalar* value,
                    Reduce reduce) {
  const int64_t rank = index.dim();
  c10::DimVector target = base_strides(out, rank, dim);
  std::vector<KernelOperand> inputs{operand_of(index)};
  if (src != nullptr) {
    c10::DimVector strides(rank, 0);
    if (src->dim() == rank) strides.assign(src->strides().begin(), src->strides().end());
    inputs.push_back(operand_with_strides(*src, strides));
  }
  const int old_input = static_cast<int>(inputs.size());
  if (reads_old_value(reduce)) inputs.push_back(operand_with_strides(out, target));
  std::vector<c10::Scalar> scalars{size_at(out, dim), stride_at(out, dim)};
  if (value != nullptr) scalars.push_back(*value);
  std::string key = std::string("scatter_") + reduce_name(reduce) + (src ? "_tensor" : "_scalar");
  IndexedKernelSpec spec;
  spec.key = key;
  spec.single_threaded = true;
  bool from_tensor = src != nullptr;
  spec.body = [reduce, from_tensor, old_input](IndexedKernelContext& context) {
    IndexOffset offset = index_offset(context.builder, context.load(0), context.scalars[0],
                                      context.scalars[1], /*wraps=*/false);
    ValueId value = from_tensor ? context.load(1) : context.scalars[2];
    value = context.builder.cast(value, context.output_dtypes[0]);
    store_reduced(context, reduce, value, offset, old_input);
  };
  launch_indexed_kernel(op_name, spec, index.sizes(), inputs, {operand_with_strides(out, target)},
                        scalars);
}

// out = where(count == 0, out, out / count), floor division for integers.
void divide_by_count(const char* op_name, const at::Tensor& out, const at::Tensor& count) {
  IndexedKernelSpec spec;
  spec.key = "divide_by_count";
  spec.body = [](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    ValueId sum = context.load(0);
    ValueId count = context.load(1);
    DType type = builder.dtype_of(sum);
    ValueId one = builder.constant(1, type);
    count = builder.select(builder.binary(OpCode::kEqual, count, builder.constant(0, type)), one, count);
    OpCode divide = ir::is_floating(type) ? OpCode::kDivide : OpCode::kFloorDivide;
    builder.store(0, builder.binary(divide, sum, count));
  };
  launch_indexed_kernel(op_name, spec, out.sizes(), {operand_of(out), operand_of(count)},
                        {operand_of(out)});
}

void check_out_dtype(const at::Tensor& out, const at::Tensor& self) {
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
              self.dtype(), ", but got ", out.dtype(), " instead");
}

// ATen's scatter_meta_impl and scatter_impl: checks, out = self, then the
// scatter (after the identity fill for include_self=False, and followed by the
// division of a mean).
void scatter_impl(const char* op_name, const at::Tensor& self, int64_t dim,
                  const at::Tensor& index, const at::Tensor* src, const c10::Scalar* value,
                  Reduce reduce, bool include_self, const at::Tensor& out) {
  record_op(op_name, OpPath::kCompiled);
  dim = at::maybe_wrap_dim(dim, self.dim());
  std::optional<at::Tensor> src_opt;
  if (src != nullptr) src_opt = *src;
  at::native::scatter_gather_dtype_check("scatter", self, index, src_opt);
  at::native::scatter_shape_check(self, dim, index, src_opt);
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  if (src != nullptr) at::assert_no_overlap(out, *src);
  check_out_dtype(out, self);
  at::native::resize_output(out, self.sizes());
  TORCH_CHECK_NOT_IMPLEMENTED(!(reduce == Reduce::kMean && self.scalar_type() == at::kBool),
                              "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'");
  if (!out.is_same(self)) copy_tensor(op_name, out, self);
  if (index.numel() == 0) return;
  // The CPU kernel converts the value to self's dtype before it reads an
  // index: one that does not fit raises first (found by tests/python/op_fuzz.py).
  if (value != nullptr && !self.is_complex()) scalar_as(*value, self.scalar_type());
  at::Tensor device_index = on_device(index, self);
  at::Tensor device_src;
  if (src != nullptr) {
    check_same_device(self.device(), *src);
    device_src = *src;
  }
  const int64_t size = size_at(self, dim);
  check_index_bounds(op_name, device_index, {size, /*wraps=*/false}, ErrorType::kRuntimeError,
                     out_of_bounds_message(dim, size));
  if (reduce != Reduce::kNone && !include_self) {
    c10::Scalar start = identity(reduce, self.scalar_type());
    scatter_kernel(op_name, out, dim, device_index, nullptr, &start, Reduce::kNone);
  }
  scatter_kernel(op_name, out, dim, device_index, src ? &device_src : nullptr, value, reduce);
  if (reduce == Reduce::kMean) {
    at::Tensor count = include_self ? at::ones_like(out) : at::zeros_like(out);
    c10::Scalar one(int64_t{1});
    scatter_kernel(op_name, count, dim, device_index, nullptr, &one, Reduce::kSum);
    divide_by_count(op_name, out, count);
  }
}

// The index_add / index_reduce checks of ATen's index_func_meta_impl.
void check_index_function(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, const char* name) {
  const int64_t count = index.numel();
  TORCH_CHECK_INDEX(index.dim() <= 1, name, "_(): Index is supposed to be a vector, but got dim: ",
                    index.dim(), " with type: ", index.scalar_type(), " and size: ", index.sizes());
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt, name,
              "_(): Expected dtype int32/int64 for index but got: ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), name, "_(): self (", self.scalar_type(),
              ") and source (", source.scalar_type(), ") must have the same scalar type");
  TORCH_CHECK(dim == 0 || dim < source.dim(), name, "_(): Indexing dim ", dim,
              " is out of bounds of the source tensor with dim ", source.dim());
  TORCH_CHECK(count == (source.dim() == 0 ? 1 : source.size(dim)), name,
              "_(): Number of indices (", count, ") should be equal to source.size(dim): (",
              source.size(dim), "), for dim: ", dim);
}

// Operands of an index_add/index_copy kernel over source's shape: the index
// along `dim`, and `out` as a base along `dim`.
KernelOperand index_along(const at::Tensor& index, int64_t rank, int64_t dim) {
  c10::DimVector strides(rank, 0);
  if (rank > 0 && index.dim() == 1) strides[dim] = index.stride(0);
  return operand_with_strides(index, strides);
}

// out[.., index[i], ..] (reduce)= source[.., i, ..] (or a scalar value; times
// alpha when given) over `shape`: source's shape, or out's with `dim` the
// index's length.
void index_along_kernel(const char* op_name, c10::IntArrayRef shape, const at::Tensor& out,
                        int64_t dim, const at::Tensor& index, const at::Tensor* source,
                        const c10::Scalar* value, Reduce reduce, const c10::Scalar* alpha,
                        bool wraps) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  c10::DimVector target = base_strides(out, rank, dim);
  std::vector<KernelOperand> inputs{index_along(index, rank, dim)};
  if (source != nullptr) inputs.push_back(operand_of(*source));
  const int old_input = static_cast<int>(inputs.size());
  if (reads_old_value(reduce)) inputs.push_back(operand_with_strides(out, target));
  std::vector<c10::Scalar> scalars{size_at(out, dim), stride_at(out, dim)};
  if (value != nullptr) scalars.push_back(*value);
  if (alpha != nullptr) scalars.push_back(*alpha);
  std::string key = std::string("index_") + reduce_name(reduce) + (source ? "_tensor" : "_scalar") +
                    (alpha ? "_alpha" : "") + (wraps ? "_wrap" : "");
  IndexedKernelSpec spec;
  spec.key = key;
  spec.single_threaded = true;
  bool from_tensor = source != nullptr;
  bool scaled = alpha != nullptr;
  spec.body = [reduce, from_tensor, scaled, wraps, old_input](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    DType type = context.output_dtypes[0];
    IndexOffset offset = index_offset(builder, context.load(0), context.scalars[0],
                                      context.scalars[1], wraps);
    ValueId value = from_tensor ? context.load(1) : builder.cast(context.scalars[2], type);
    if (scaled) {
      ValueId factor = builder.cast(context.scalars[from_tensor ? 2 : 3], ir::compute_dtype(type));
      value = builder.binary(type == DType::kBool ? OpCode::kLogicalAnd : OpCode::kMultiply, value,
                             factor);
    }
    store_reduced(context, reduce, value, offset, old_input);
  };
  launch_indexed_kernel(op_name, spec, shape, inputs, {operand_with_strides(out, target)}, scalars);
}

// index_add and index_reduce require source's shape to be self's but along dim.
void check_same_slices(const at::Tensor& self, int64_t dim, const at::Tensor& source) {
  bool same_shape = self.dim() == source.dim();
  for (int64_t d = 0; same_shape && d < self.dim(); ++d) {
    if (d != dim && self.size(d) != source.size(d)) same_shape = false;
  }
  TORCH_CHECK(same_shape, "source tensor shape must match self tensor shape, excluding the ",
              "specified dimension. Got self.shape = ", self.sizes(),
              " source.shape = ", source.sizes());
}

}  // namespace

at::Tensor& scatter_src_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out) {
  scatter_impl("aten::scatter.src_out", self, dim, index, &src, nullptr, Reduce::kNone, true, out);
  return out;
}

at::Tensor& scatter_value_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const c10::Scalar& value, at::Tensor& out) {
  scatter_impl("aten::scatter.value_out", self, dim, index, nullptr, &value, Reduce::kNone, true,
               out);
  return out;
}

at::Tensor& scatter_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                               const at::Tensor& src, c10::string_view reduce, at::Tensor& out) {
  Reduce op = parse_reduce(reduce, /*scatter_reduce_names=*/false);
  scatter_impl("aten::scatter.reduce_out", self, dim, index, &src, nullptr, op, true, out);
  return out;
}

at::Tensor& scatter_value_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                     const c10::Scalar& value, c10::string_view reduce,
                                     at::Tensor& out) {
  Reduce op = parse_reduce(reduce, /*scatter_reduce_names=*/false);
  scatter_impl("aten::scatter.value_reduce_out", self, dim, index, nullptr, &value, op, true, out);
  return out;
}

at::Tensor& scatter_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out) {
  scatter_impl("aten::scatter_add.out", self, dim, index, &src, nullptr, Reduce::kSum, true, out);
  return out;
}

at::Tensor& scatter_reduce_two_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Tensor& src, c10::string_view reduce,
                                   bool include_self, at::Tensor& out) {
  Reduce op = parse_reduce(reduce, /*scatter_reduce_names=*/true);
  scatter_impl("aten::scatter_reduce.two_out", self, dim, index, &src, nullptr, op, include_self,
               out);
  return out;
}

at::Tensor& index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                            const at::Tensor& values, bool accumulate, bool unsafe) {
  const char* op_name = "aten::_index_put_impl_";
  record_op(op_name, OpPath::kCompiled);
  (void)unsafe;
  TORCH_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= self.dim(),
                    "too many indices for tensor of dimension ", self.dim(), " (got ",
                    indices.size(), ")");
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of index_put_ on expanded tensors is deprecated. "
               "Please clone() the tensor before performing this operation. "
               "This also applies to advanced indexing e.g. tensor[indices] = tensor");
  }
  at::Tensor value = values;
  if (!accumulate && std::get<0>(at::native::canDispatchToMaskedFill(self, indices, values))) {
    // The CPU fills with value.item(), converted to self's dtype.
    value = values.to(self.device(), self.scalar_type());
  }
  if (value.device() != self.device() && value.numel() == 1 && value.dim() == 0) {
    value = value.to(self.device());
  }
  at::assert_no_overlap(self, value);
  for (const std::optional<at::Tensor>& entry : indices) {
    if (entry.has_value() && entry->defined()) at::assert_no_overlap(self, *entry);
  }
  TORCH_CHECK(value.device() == self.device(), "expected device ", self.device(),
              " but got device ", value.device(), " for value tensor");
  AdvancedIndexPlan plan = plan_advanced_index(self, indices);
  c10::IntArrayRef shape = plan.src.sizes();
  TORCH_CHECK(at::is_expandable_to(value.sizes(), shape), "shape mismatch: value tensor of shape ",
              value.sizes(), " cannot be broadcast to indexing result of shape ", shape);
  TORCH_CHECK(value.scalar_type() == plan.src.scalar_type(),
              "Index put requires the source and destination dtypes match, got ",
              plan.src.scalar_type(), " for the destination and ", value.scalar_type(),
              " for the source.");
  // The CPU checks each index as its kernel reaches it: with nothing to
  // write (an empty slice per index) none is read, and an index out of range
  // is no error (found by tests/python/op_fuzz.py).
  if (c10::multiply_integers(shape) == 0) return self;
  check_advanced_index(op_name, plan);
  std::vector<IndexTerm> terms = fold_index_terms(op_name, shape, plan.terms, /*wraps=*/true);
  std::vector<KernelOperand> inputs{operand_of(value.expand(shape))};
  std::vector<c10::Scalar> scalars;
  add_index_terms(terms, inputs, scalars);
  const int count = static_cast<int>(terms.size());
  std::string key = "index_put" + std::to_string(count) + (accumulate ? "_add" : "");
  IndexedKernelSpec spec;
  spec.key = key;
  spec.single_threaded = true;
  spec.body = [count, accumulate](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    IndexOffset offset{builder.constant(0, DType::kInt64), builder.constant(1, DType::kBool)};
    if (count > 0) offset = sum_index_offsets(context, 1, 0, count, /*wraps=*/true);
    store_reduced(context, accumulate ? Reduce::kSum : Reduce::kNone, context.load(0), offset, -1);
  };
  launch_indexed_kernel(op_name, spec, shape, inputs, {operand_of(plan.src)}, scalars);
  return self;
}

at::Tensor& index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, const c10::Scalar& alpha, at::Tensor& out) {
  const char* op_name = "aten::index_add.out";
  record_op(op_name, OpPath::kCompiled);
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_index_function(self, dim, index, source, "index_add");
  check_same_slices(self, dim, source);
  check_out_dtype(out, self);
  at::native::resize_output(out, self.sizes());
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, source);
  if (!out.is_same(self)) copy_tensor(op_name, out, self);
  // The CPU's three paths (found by tests/python/op_fuzz.py): a self of rank
  // 0 or 1 checks every index against its numel, empty or not, with an
  // IndexError; a larger one returns when empty, and checks with a
  // RuntimeError naming the index when alpha is 1 (its fast path), an
  // IndexError otherwise.
  const bool vector = self.dim() <= 1;
  if (index.numel() == 0 || (!vector && out.numel() == 0)) return out;
  at::Tensor device_index = on_device(index, self);
  const int64_t size = vector ? self.numel() : size_at(self, dim);
  bool unit = alpha.isIntegral(true) ? alpha.toLong() == 1 : alpha.toDouble() == 1.0;
  if (vector || !unit) {
    check_index_bounds(op_name, device_index, {size, /*wraps=*/false}, ErrorType::kIndexError,
                       [](int64_t) { return std::string("index out of range in self"); });
  } else {
    check_index_bounds(op_name, device_index, {size, /*wraps=*/false}, ErrorType::kRuntimeError,
                       out_of_bounds_message(dim, size));
  }
  if (out.numel() == 0) return out;
  index_along_kernel(op_name, source.sizes(), out, dim, device_index, &source, nullptr,
                     Reduce::kSum, unit ? nullptr : &alpha, /*wraps=*/false);
  return out;
}

at::Tensor& index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             const at::Tensor& source, c10::string_view reduce, bool include_self,
                             at::Tensor& out) {
  const char* op_name = "aten::index_reduce.out";
  record_op(op_name, OpPath::kCompiled);
  TORCH_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
              "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got ",
              reduce, ".");
  Reduce op = parse_reduce(reduce, /*scatter_reduce_names=*/true);
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_index_function(self, dim, index, source, "index_reduce");
  check_same_slices(self, dim, source);
  check_out_dtype(out, self);
  at::native::resize_output(out, self.sizes());
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, source);
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool,
                              "\"index_func_\" not implemented for 'Bool'");
  if (!out.is_same(self)) copy_tensor(op_name, out, self);
  if (index.numel() == 0 || out.numel() == 0) return out;
  at::Tensor device_index = on_device(index, self);
  check_index_bounds(op_name, device_index, {size_at(self, dim), /*wraps=*/false},
                     ErrorType::kIndexError,
                     [](int64_t) { return std::string("index out of range in self"); });
  if (!include_self) {
    c10::Scalar start = identity(op, self.scalar_type());
    index_along_kernel(op_name, source.sizes(), out, dim, device_index, nullptr, &start,
                       Reduce::kNone, nullptr, false);
  }
  index_along_kernel(op_name, source.sizes(), out, dim, device_index, &source, nullptr, op, nullptr,
                     false);
  if (op == Reduce::kMean) {
    at::Tensor count = include_self ? at::ones_like(out) : at::zeros_like(out);
    c10::Scalar one(int64_t{1});
    index_along_kernel(op_name, source.sizes(), count, dim, device_index, nullptr, &one,
                       Reduce::kSum, nullptr, false);
    divide_by_count(op_name, out, count);
  }
  return out;
}

// ATen's index_fill_: negative indices count from the end; the value is
// converted to self's dtype.
at::Tensor& index_fill_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const c10::Scalar& value) {
  const char* op_name = "aten::index_fill_.int_Scalar";
  record_op(op_name, OpPath::kCompiled);
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "index_fill_(): Expected dtype int64 for index.");
  at::assert_no_overlap(self, index);
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of index_fill_ on expanded tensors is deprecated. "
               "Please clone() the tensor before performing this operation. "
               "This also applies to advanced indexing e.g. tensor[indices] = tensor");
  }
  TORCH_CHECK(self.is_complex() || !value.isComplex(),
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");
  at::Tensor target = self.dim() == 0 ? self.unsqueeze(-1) : self;
  dim = at::maybe_wrap_dim(dim, target.dim());
  TORCH_CHECK(index.dim() <= 1, "Index has to be a vector/scalar");
  if (index.numel() > 0 && target.numel() == 0) {
    // The CPU views self with index.numel() elements along dim (stride 0)
    // before its kernel; over an empty self that view can need storage self
    // lacks (an index into an empty dim), and as_strided raises the CPU's
    // error (found by tests/python/op_fuzz.py).
    c10::DimVector sizes(target.sizes().begin(), target.sizes().end());
    c10::DimVector strides(target.strides().begin(), target.strides().end());
    sizes[dim] = index.numel();
    strides[dim] = 0;
    (void)target.as_strided(sizes, strides);
  }
  // The CPU kernel converts the value to self's dtype even when there is
  // nothing to fill, and before it reads an index: one that does not fit
  // raises first (found by tests/python/op_fuzz.py).
  if (!self.is_complex()) scalar_as(value, self.scalar_type());
  if (index.numel() == 0 || target.numel() == 0) return self;
  at::Tensor device_index = on_device(index, self);
  const int64_t size = target.size(dim);
  check_index_bounds(op_name, device_index, {size, /*wraps=*/true}, ErrorType::kIndexError,
                     out_of_bounds_message(dim, size));
  c10::DimVector shape(target.sizes().begin(), target.sizes().end());
  shape[dim] = index.numel();
  index_along_kernel(op_name, shape, target, dim, device_index, nullptr, &value, Reduce::kNone,
                     nullptr, /*wraps=*/true);
  return self;
}

at::Tensor& index_fill_tensor_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                               const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, ",
              "but got tensor with ", value.dim(), " dimension(s).");
  return index_fill_(self, dim, index, value.item());
}

at::Tensor& index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                           const at::Tensor& source, at::Tensor& out) {
  const char* op_name = "aten::index_copy.out";
  record_op(op_name, OpPath::kCompiled);
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_out_dtype(out, self);
  at::native::resize_output(out, self.sizes());
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, source);
  TORCH_CHECK_INDEX(index.dim() < 2, "index_copy_(): Index should have dimension 1 or 0 (got ",
                    index.dim(), ")");
  const int64_t count = index.numel();
  if (source.dim() == 0 && count != 1) {
    TORCH_CHECK_INDEX(false, "index_copy_(): When source is scalar, index should have one element (got ",
                      count, ")");
  } else if ((source.dim() != self.dim()) && (source.dim() != 0 && self.dim() != 0)) {
    TORCH_CHECK_INDEX(false, "index_copy_(): When source and destination are not scalars, their ",
                      "dimensionality must match. Source dimensionality (", source.dim(),
                      "), destination dimensionality (", self.dim(), ")");
  }
  TORCH_CHECK(index.scalar_type() == at::kLong,
              "index_copy_(): Expected a long tensor for index, but got ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "index_copy_(): self and source expected to have the same dtype, but got (self) ",
              self.scalar_type(), " and (source) ", source.scalar_type());
  std::vector<int64_t> self_slice = self.sizes().vec();
  if (!self_slice.empty()) self_slice.erase(self_slice.begin() + dim);
  std::vector<int64_t> source_slice = source.sizes().vec();
  if (!source_slice.empty()) source_slice.erase(source_slice.begin() + dim);
  if (self_slice != source_slice) {
    std::ostringstream message;
    message << "index_copy_(): Source/destination tensor must have same slice shapes. "
            << "Destination slice shape: " << c10::IntArrayRef(self_slice) << " at dimension " << dim
            << " and source slice shape: " << c10::IntArrayRef(source_slice) << " at dimension 0.";
    TORCH_CHECK(false, message.str());
  }
  TORCH_CHECK_INDEX(source.dim() == 0 || count == source.size(dim), "index_copy_(): Number of indices (",
                    count, ") should be equal to source.size(dim) (", source.size(dim), ")");
  if (!out.is_same(self)) copy_tensor(op_name, out, self);
  if (count == 0 || out.numel() == 0) return out;
  at::Tensor device_index = on_device(index, self);
  const int64_t size = size_at(self, dim);
  check_index_bounds(op_name, device_index, {size, /*wraps=*/false}, ErrorType::kIndexError,
                     out_of_bounds_message(dim, size, "index_copy_(): "));
  index_along_kernel(op_name, source.sizes(), out, dim, device_index, &source, nullptr,
                     Reduce::kNone, nullptr, /*wraps=*/false);
  return out;
}

// grad_weight[indices[i]] += grad_output[i] (scaled by 1 / count of
// indices[i] when scale_grad_by_freq), skipping padding_idx. As on the CPU,
// an index outside [0, num_weights) adds nothing and raises nothing.
at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices,
                                    int64_t num_weights, int64_t padding_idx,
                                    bool scale_grad_by_freq) {
  const char* op_name = "aten::embedding_dense_backward";
  record_op(op_name, OpPath::kCompiled);
  at::checkScalarTypes("embedding_backward", at::TensorArg(indices, "indices", 2),
                       {at::kLong, at::kInt});
  const int64_t width = grad_output.size(-1);
  at::Tensor grad_weight = at::zeros({num_weights, width}, grad_output.options());
  const int64_t count = indices.numel();
  if (count == 0 || width == 0) return grad_weight;
  at::Tensor grad = grad_output.reshape({count, width});
  at::Tensor index = on_device(indices, grad_output).reshape({count});
  at::Tensor frequency;
  if (scale_grad_by_freq) {
    frequency = at::zeros({num_weights}, index.options().dtype(at::kLong));
    IndexedKernelSpec spec;
    spec.key = "embedding_frequency";
    spec.single_threaded = true;
    spec.body = [](IndexedKernelContext& context) {
      ir::Builder& builder = context.builder;
      IndexOffset offset = index_offset(builder, context.load(0), context.scalars[0],
                                        builder.constant(1, DType::kInt64), /*wraps=*/false);
      ValueId one = builder.constant(1, DType::kInt64);
      store_reduced(context, Reduce::kSum, one, offset, -1);
    };
    c10::Scalar scalars[] = {num_weights};
    launch_indexed_kernel(op_name, spec, {count}, {operand_of(index)},
                          {operand_with_strides(frequency, {0})}, scalars);
  }
  std::vector<KernelOperand> inputs{operand_of(grad),
                                    operand_with_strides(index, {index.stride(0), 0})};
  if (scale_grad_by_freq) inputs.push_back(operand_with_strides(frequency, {0, 0}));
  IndexedKernelSpec spec;
  spec.key = scale_grad_by_freq ? "embedding_backward_scaled" : "embedding_backward";
  spec.single_threaded = true;
  spec.body = [scale_grad_by_freq](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    ValueId raw = context.int64(context.load(1));
    IndexOffset offset = index_offset(builder, raw, context.scalars[0], context.scalars[1],
                                      /*wraps=*/false);
    ValueId value = context.load(0);
    if (scale_grad_by_freq) {
      IndexOffset row = index_offset(builder, raw, context.scalars[0],
                                     builder.constant(1, DType::kInt64), /*wraps=*/false);
      ValueId frequency = builder.cast(context.load_at(2, row.offset), DType::kFloat64);
      ValueId scale = builder.binary(OpCode::kDivide, builder.constant(1, DType::kFloat64), frequency);
      value = builder.binary(OpCode::kMultiply, value,
                             builder.cast(scale, builder.dtype_of(value)));
    }
    ValueId kept = builder.binary(OpCode::kNotEqual, raw, context.scalars[2]);
    offset.valid = builder.binary(OpCode::kLogicalAnd, offset.valid, kept);
    store_reduced(context, Reduce::kSum, value, offset, -1);
  };
  c10::Scalar scalars[] = {num_weights, grad_weight.stride(0), padding_idx};
  launch_indexed_kernel(op_name, spec, {count, width}, inputs,
                        {operand_with_strides(grad_weight, {0, grad_weight.stride(1)})}, scalars);
  return grad_weight;
}

// self[mask] = source[:count] in row-major order: one thread keeps the count
// of true mask elements in a device scalar (read and written through two
// operands) and reads source at it. A source too small is reported with the
// CPU's message by check_device_value after the kernel.
at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  const char* op_name = "aten::masked_scatter_";
  record_op(op_name, OpPath::kCompiled);
  at::assert_no_internal_overlap(self);
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter: expected self and source to have same dtypes but got",
              self.scalar_type(), " and ", source.scalar_type());
  TORCH_CHECK(mask.scalar_type() == at::kBool,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  at::Tensor device_mask = on_device(mask, self);
  c10::MaybeOwned<at::Tensor> expanded = at::expand_inplace(self, device_mask, "masked_scatter_");
  if (self.numel() == 0) return self;
  at::Tensor target = self;
  at::Tensor keep = *expanded;
  if (target.is_contiguous() && keep.is_contiguous()) {
    target = target.view({-1});
    keep = keep.reshape({-1});
  }
  TORCH_CHECK(target.dim() <= ir::kMaxRank, op_name, ": the kiln device supports at most ",
              ir::kMaxRank, " dims for non-contiguous inputs, got ", target.dim());
  const int64_t available = source.numel();
  at::Tensor flat = available > 0 ? on_device(source, self).contiguous()
                                  : at::zeros({1}, self.options());
  at::Tensor counter = at::zeros({1}, self.options().dtype(at::kLong));
  c10::DimVector zeros(target.dim(), 0);
  IndexedKernelSpec spec;
  spec.key = "masked_scatter";
  spec.single_threaded = true;
  spec.logical_order = true;
  spec.body = [](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    ValueId selected = context.load(0);
    ValueId seen = context.load(3);
    ValueId take = builder.binary(OpCode::kLogicalAnd, selected,
                                  builder.binary(OpCode::kLess, seen, context.scalars[0]));
    ValueId zero = builder.constant(0, DType::kInt64);
    ValueId replacement = context.load_at(1, builder.select(take, seen, zero));
    builder.store_indexed(0, builder.binary(OpCode::kAdd, seen, context.int64(selected)), zero, false);
    builder.store(1, builder.select(take, replacement, context.load(2)));
  };
  c10::Scalar scalars[] = {available};
  launch_indexed_kernel(op_name, spec, target.sizes(),
                        {operand_of(keep), operand_with_strides(flat, zeros), operand_of(target),
                         operand_with_strides(counter, zeros)},
                        {operand_with_strides(counter, zeros), operand_of(target)}, scalars);
  check_device_value(op_name, counter, ErrorType::kRuntimeError,
                     [available](int64_t used) -> std::optional<std::string> {
                       if (used <= available) return std::nullopt;
                       return std::string("Number of elements of source < number of ones in mask");
                     });
  return self;
}

at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source,
                 bool accumulate) {
  const char* op_name = "aten::put_";
  record_op(op_name, OpPath::kCompiled);
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong,
                    "put_(): Expected a long tensor for index, but got ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "put_(): self and source expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and source.dtype = ", source.scalar_type());
  TORCH_CHECK(self.device() == source.device() && self.device() == index.device(),
              "put_(): self, index and source expected to be in the same device, but got "
              "self.device = ", self.device(), ", index.device = ", index.device(),
              ", and source.device = ", source.device());
  at::assert_no_internal_overlap(self);
  at::assert_no_overlap(self, index);
  at::assert_no_overlap(self, source);
  TORCH_CHECK_INDEX(index.numel() == source.numel(),
                    "put_(): Expected source and index to have the same number of elements, but "
                    "got source.numel() = ", source.numel(), ", index.numel() = ", index.numel());
  if (index.numel() == 0) return self;
  TORCH_CHECK_INDEX(self.numel() != 0, "put_(): Tried to put elements into an empty tensor");
  const int64_t numel = self.numel();
  check_index_bounds(op_name, index, {numel, /*wraps=*/true}, ErrorType::kIndexError,
                     [numel](int64_t value) {
                       return "out of range: tried to access index " + std::to_string(value) +
                              " on a tensor of " + std::to_string(numel) + " elements.";
                     });
  at::Tensor target = self.is_contiguous() ? self : self.contiguous();
  IndexedKernelSpec spec;
  spec.key = accumulate ? "put_add" : "put";
  spec.single_threaded = true;
  spec.body = [accumulate](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    IndexOffset offset = index_offset(builder, context.load(0), context.scalars[0],
                                      builder.constant(1, DType::kInt64), /*wraps=*/true);
    store_reduced(context, accumulate ? Reduce::kSum : Reduce::kNone, context.load(1), offset, -1);
  };
  c10::Scalar scalars[] = {numel};
  const int64_t count = index.numel();
  launch_indexed_kernel(op_name, spec, {count},
                        {operand_of(index.reshape({count})), operand_of(source.reshape({count}))},
                        {operand_with_strides(target, {0})}, scalars);
  if (!target.is_same(self)) copy_tensor(op_name, self, target);
  return self;
}

}  // namespace kiln::torch_integration::compiled
