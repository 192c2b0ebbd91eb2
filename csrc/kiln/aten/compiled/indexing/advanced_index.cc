#include "kiln/aten/compiled/indexing/advanced_index.h"

#include <ATen/ExpandUtils.h>
#include <ATen/native/IndexingUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <sstream>

#include "kiln/aten/compiled/launch/index_checks.h"
#include "kiln/aten/compiled/launch/reduction.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;

// An index of the list, as it moves through planning.
struct Index {
  at::Tensor tensor;     // undefined: the dim is not indexed
  at::Tensor original;   // before broadcasting; undefined when from a mask
};

std::string shapes_of(const std::vector<Index>& indices) {
  std::ostringstream text;
  bool first = true;
  for (const Index& index : indices) {
    if (!index.tensor.defined()) continue;
    if (!first) text << ", ";
    text << index.tensor.sizes();
    first = false;
  }
  return text.str();
}

// Bool/byte masks become the columns of their nonzero(); other indices move
// to self's device.
std::vector<Index> expand_masks(const char* op_name, const at::Tensor& self,
                                const c10::List<std::optional<at::Tensor>>& indices) {
  std::vector<Index> result;
  for (const std::optional<at::Tensor>& entry : indices) {
    if (!entry.has_value() || !entry->defined()) {
      result.emplace_back();
      continue;
    }
    const at::Tensor& index = *entry;
    if (index.scalar_type() != at::kByte && index.scalar_type() != at::kBool) {
      at::Tensor moved = index.to(self.device());
      result.push_back({moved, moved});
      continue;
    }
    if (index.scalar_type() == at::kByte) {
      TORCH_WARN("indexing with dtype torch.uint8 is now deprecated,"
                 " please use a dtype torch.bool instead.");
    }
    for (int64_t j = 0; j < index.dim(); ++j) {
      int64_t source_dim = static_cast<int64_t>(result.size()) + j;
      if (index.size(j) != self.size(source_dim)) {
        TORCH_CHECK_INDEX(false, "The shape of the mask ", index.sizes(), " at index ", j,
                          " does not match the shape of the indexed tensor ", self.sizes(),
                          " at index ", source_dim);
      }
    }
    at::Tensor nonzero = nonzero_compiled(op_name, index.to(self.device()));
    for (int64_t j = 0; j < index.dim(); ++j) result.push_back({nonzero.select(1, j), {}});
  }
  return result;
}

}  // namespace

AdvancedIndexPlan plan_advanced_index(const at::Tensor& self,
                                      const c10::List<std::optional<at::Tensor>>& indices) {
  const char* op_name = "aten::index.Tensor";
  TORCH_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= self.dim(),
                    "too many indices for tensor of dimension ", self.dim(), " (got ",
                    indices.size(), ")");
  for (const std::optional<at::Tensor>& entry : indices) {
    if (!entry.has_value() || !entry->defined()) continue;
    at::ScalarType type = entry->scalar_type();
    if (type != at::kLong && type != at::kInt && type != at::kByte && type != at::kBool) {
      TORCH_CHECK_INDEX(false, "tensors used as indices must be long, int, byte or bool tensors");
    }
    TORCH_CHECK(entry->is_cpu() || entry->device() == self.device(), "indices should be either on ",
                at::kCPU, " or on the same device as the indexed tensor (", self.device(), ")");
  }
  std::vector<Index> list = expand_masks(op_name, self, indices);

  std::vector<at::Tensor> tensors;
  for (const Index& index : list) tensors.push_back(index.tensor);
  try {
    tensors = at::expand_outplace(tensors);
  } catch (std::exception&) {
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together",
                      " with shapes ", shapes_of(list));
  }
  for (size_t k = 0; k < list.size(); ++k) list[k].tensor = tensors[k];
  while (static_cast<int64_t>(list.size()) < self.dim()) list.emplace_back();

  // Non-adjacent indexed dims move to the front, together with self's dims.
  at::Tensor source = self;
  tensors.clear();
  for (const Index& index : list) tensors.push_back(index.tensor);
  if (!at::native::hasContiguousSubspace(tensors)) {
    std::vector<int64_t> order;
    std::vector<Index> reordered;
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t dim = 0; dim < self.dim(); ++dim) {
        if (list[dim].tensor.defined() == (pass == 0)) {
          order.push_back(dim);
          reordered.push_back(list[dim]);
        }
      }
    }
    source = self.permute(order);
    list = std::move(reordered);
  }

  // ATen's AdvancedIndex: the indexed subspace of `source` is replaced by the
  // indices' broadcast shape, with stride 0.
  int64_t dims_before = 0, dims_after = 0, dims_indexed = 0;
  c10::DimVector replacement_shape, indexed_sizes, indexed_strides;
  for (int64_t dim = 0; dim < static_cast<int64_t>(list.size()); ++dim) {
    if (!list[dim].tensor.defined()) {
      (dims_indexed == 0 ? dims_before : dims_after)++;
      continue;
    }
    ++dims_indexed;
    replacement_shape.assign(list[dim].tensor.sizes().begin(), list[dim].tensor.sizes().end());
    indexed_sizes.push_back(source.size(dim));
    indexed_strides.push_back(source.stride(dim));
  }
  bool empty_dim = std::find(indexed_sizes.begin(), indexed_sizes.end(), 0) != indexed_sizes.end();
  bool empty_replacement =
      std::find(replacement_shape.begin(), replacement_shape.end(), 0) != replacement_shape.end();
  TORCH_CHECK_INDEX(!empty_dim || empty_replacement,
                    "index is out of bounds for dimension with size 0");

  c10::DimVector shape(source.sizes().begin(), source.sizes().end());
  c10::DimVector strides(source.strides().begin(), source.strides().end());
  shape.erase(shape.begin() + dims_before, shape.begin() + dims_before + dims_indexed);
  strides.erase(strides.begin() + dims_before, strides.begin() + dims_before + dims_indexed);
  shape.insert(shape.begin() + dims_before, replacement_shape.begin(), replacement_shape.end());
  strides.insert(strides.begin() + dims_before, replacement_shape.size(), 0);

  AdvancedIndexPlan plan;
  plan.src = source.as_strided(shape, strides);
  int term = 0;
  for (const Index& index : list) {
    if (!index.tensor.defined()) continue;
    c10::DimVector index_shape(dims_before, 1);
    index_shape.append(index.tensor.sizes().begin(), index.tensor.sizes().end());
    index_shape.append(dims_after, 1);
    at::Tensor view = index.tensor.reshape(index_shape).expand(shape);
    plan.terms.push_back({operand_of(view), indexed_sizes[term], indexed_strides[term]});
    plan.checked.push_back(index.original);
    ++term;
  }
  return plan;
}

int64_t count_nonzero(const char* op_name, const at::Tensor& self) {
  if (self.numel() == 0) return 0;
  at::Tensor input = self.dim() == 0 ? self.reshape({1}) : self;
  at::Tensor count = at::empty({}, self.options().dtype(at::kLong));
  c10::DimVector dims;
  for (int64_t dim = 0; dim < input.dim(); ++dim) dims.push_back(dim);
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kSum;
  spec.element = [](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ir::ValueId value = context.inputs[0];
    ir::ValueId zero = builder.constant(0, builder.dtype_of(value));
    return builder.cast(builder.binary(OpCode::kNotEqual, value, zero), ir::DType::kInt64);
  };
  launch_reduction(op_name, "count_nonzero", {input}, {keepdim_view(count, input.dim(), dims)},
                   dims, {}, spec);
  return count.item<int64_t>();
}

void check_advanced_index(const char* op_name, const AdvancedIndexPlan& plan) {
  for (size_t k = 0; k < plan.terms.size(); ++k) {
    if (!plan.checked[k].defined()) continue;
    int64_t size = plan.terms[k].size;
    check_index_bounds(op_name, plan.checked[k], {size, /*wraps=*/true}, ErrorType::kIndexError,
                       out_of_bounds_message(static_cast<int64_t>(k), size));
  }
}

// The result is laid out as the CPU's and CUDA's are: the transpose of a
// (rank, count) tensor, strides (1, count), so each dim's indices (a column,
// what torch.where(mask) and boolean indexing take) are contiguous.
// The fill runs over self in row-major order, one thread, keeping the count
// of nonzeros seen in a device scalar it reads and writes through two
// operands. Dim d's column starts at d * count; a zero element writes its
// coordinates to a scratch element past the result, rank * count, as a
// kernel's stores cannot be skipped (for dim d, (rank - d) * count past the
// column's start).
at::Tensor nonzero_compiled(const char* op_name, const at::Tensor& self) {
  const int64_t rank = self.dim();
  TORCH_CHECK(rank <= ir::kMaxRank, op_name, ": the kiln device supports at most ", ir::kMaxRank,
              " dims, got ", rank);
  const int64_t count = count_nonzero(op_name, self);
  const at::TensorOptions options = self.options().dtype(at::kLong);
  if (count == 0 || rank == 0) return at::empty({0}, options).as_strided({count, rank}, {1, count});
  at::Tensor buffer = at::empty({rank * count + 1}, options);
  at::Tensor result = buffer.as_strided({count, rank}, {1, count});

  at::Tensor counter = at::zeros({1}, options);
  c10::DimVector zeros(rank, 0);
  std::vector<KernelOperand> outputs{operand_with_strides(counter, zeros)};
  for (int64_t dim = 0; dim < rank; ++dim) outputs.push_back(operand_with_strides(buffer, zeros, dim * count));
  IndexedKernelSpec spec;
  spec.key = "nonzero";
  spec.single_threaded = true;
  spec.logical_order = true;
  spec.body = [rank](IndexedKernelContext& context) {
    ir::Builder& builder = context.builder;
    ir::ValueId value = context.load(0);
    ir::ValueId nonzero = builder.binary(OpCode::kNotEqual, value,
                                         builder.constant(0, builder.dtype_of(value)));
    ir::ValueId seen = context.load(1);
    builder.store(0, builder.binary(OpCode::kAdd, seen, context.int64(nonzero)));
    for (int64_t dim = 0; dim < rank; ++dim) {
      ir::ValueId scratch = builder.binary(OpCode::kMultiply, context.scalars[0],
                                           context.constant(static_cast<double>(rank - dim), ir::DType::kInt64));
      builder.store_indexed(static_cast<int>(1 + dim), builder.coordinate(static_cast<int>(rank - 1 - dim)),
                            builder.select(nonzero, seen, scratch), false);
    }
  };
  c10::Scalar scalars[] = {count};
  launch_indexed_kernel(op_name, spec, self.sizes(),
                        {operand_of(self), operand_with_strides(counter, zeros)}, outputs, scalars);
  fit_storage_to_result(result);
  return result;
}

void fit_storage_to_result(const at::Tensor& result) {
  TORCH_INTERNAL_ASSERT(result.storage_offset() == 0 && result.is_non_overlapping_and_dense());
  result.storage().unsafeGetStorageImpl()->set_nbytes(static_cast<size_t>(result.numel()) * result.itemsize());
}

}  // namespace kiln::torch_integration::compiled
