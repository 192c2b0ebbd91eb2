// embedding_bag forward and backward, built from kiln's compiled gather,
// scatter and scan kernels (index_select, index_add, scatter_reduce, cumsum,
// embedding_dense_backward): no new kernel source, every step runs on kiln.
//
// The outputs are the CPU's: offset2bag (bag of each index; left empty where
// the CPU skips it: the 'sum' fast path, float/half/bfloat16 weights without
// padding_idx, except that _embedding_bag fills it whenever it is not that
// fast path), bag_size (indices per bag not equal to padding_idx; zeros for
// 'sum'), max_indices (the weight row holding each bag's maximum, first in the
// bag among equals, 0 for empty bags; for 'mean' a copy of bag_size, for 'sum'
// zeros). With include_last_offset the last offset closes no bag: the last bag
// runs to the end of indices, as on the CPU. Half and bfloat16 sums accumulate
// in float (the CPU's fast path does too). Errors are checked on the host
// before anything is queued (offsets are read back: their values decide the
// CPU's errors).
#include "kiln/aten/compiled/nn/embedding/embedding_bag_ops.h"

#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>

#include <limits>

#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

constexpr int64_t kSum = 0, kMean = 1, kMax = 2;

struct Bags {
  at::Tensor indices;     // int64, on device
  at::Tensor offset2bag;  // int64, on device (N)
  at::Tensor valid;       // bool (N): index != padding_idx
  int64_t count = 0;      // bags
  at::ScalarType index_type;
};

void check_arguments(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
                     int64_t mode, const std::optional<at::Tensor>& per_sample_weights) {
  at::checkScalarTypes("embedding_bag", at::TensorArg(indices, "indices", 1), {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", at::TensorArg(offsets, "offsets", 1), {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", at::TensorArg(weight, "weight", 1),
                       {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble});
  TORCH_CHECK(weight.dim() == 2, "weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim());
  TORCH_CHECK(indices.dim() == 1, "input has to be a 1D or 2D Tensor, but got Tensor of dimension ",
              indices.dim());
  TORCH_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ", offsets.dim());
  TORCH_CHECK(mode >= kSum && mode <= kMax, "embedding_bag: unknown mode ", mode);
  if (per_sample_weights.has_value() && per_sample_weights->defined()) {
    TORCH_CHECK(mode == kSum, "embedding_bag: per_sample_weights only supported with mode='sum'");
    const at::Tensor& weights = *per_sample_weights;
    TORCH_CHECK(weights.scalar_type() == weight.scalar_type(), "expected scalar type ",
                weight.scalar_type(), " but found ", weights.scalar_type());
    TORCH_CHECK(weights.dim() == 1, "per_sample_weights has to be a 1D Tensor");
    TORCH_CHECK(weights.numel() == indices.numel(), "per_sample_weights must have the same number "
                "of elements as indices");
  }
}

Bags make_bags(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
               bool include_last_offset, int64_t padding_idx) {
  Bags bags;
  bags.index_type = at::promote_types(indices.scalar_type(), offsets.scalar_type());
  const int64_t length = indices.numel();
  const int64_t rows = weight.size(0);
  bags.count = include_last_offset ? offsets.numel() - 1 : offsets.numel();
  TORCH_CHECK(bags.count >= 0, "include_last_offset: number of offset should be at least 1");
  at::Tensor host_offsets = offsets.to(at::kCPU, at::kLong);
  at::Tensor host_indices = indices.to(at::kCPU, at::kLong);
  if (host_offsets.numel() > 0) {
    const int64_t first = host_offsets[0].item<int64_t>();
    TORCH_CHECK(first == 0, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                "start from position 0. However, got ", first);
    const int64_t last = host_offsets[-1].item<int64_t>();
    TORCH_CHECK(last <= length, "offsets[-1] can not be greater than input's length ", length,
                " but got offsets[-1] of ", last);
  }
  const int64_t* values = host_indices.data_ptr<int64_t>();
  for (int64_t k = 0; k < length; ++k) {
    TORCH_CHECK(values[k] >= 0 && values[k] < rows, "Index ", k, " of input takes value ", values[k],
                " which is not in the valid range [0, ", rows, ")");
  }
  // offset2bag: a 1 at each bag's start, scanned (offsets[0] is 0, so -1).
  bags.indices = indices.to(at::kLong);
  at::Tensor starts = at::zeros({length + 1}, bags.indices.options());
  if (bags.count > 0) {
    at::Tensor bag_offsets = offsets.to(at::kLong).narrow(0, 0, bags.count);
    at::index_add_out(starts, starts, 0, bag_offsets, at::ones({bags.count}, starts.options()));
  }
  at::Tensor scanned = at::empty({length + 1}, starts.options());
  at::cumsum_out(scanned, starts, 0);
  bags.offset2bag = scanned.narrow(0, 0, length).sub(1);
  bags.valid = padding_idx >= 0 ? bags.indices.ne(padding_idx) : at::ones({length}, bags.indices.options().dtype(at::kBool));
  return bags;
}

at::ScalarType accumulate_type(const at::Tensor& weight) {
  const at::ScalarType type = weight.scalar_type();
  return (type == at::kHalf || type == at::kBFloat16) ? at::kFloat : type;
}

// Each index's weight row times its per-sample weight, padding rows zero.
at::Tensor gathered_rows(const at::Tensor& weight, const Bags& bags,
                         const std::optional<at::Tensor>& per_sample_weights, at::ScalarType type) {
  at::Tensor rows = weight.index_select(0, bags.indices).to(type);
  if (per_sample_weights.has_value() && per_sample_weights->defined()) {
    rows = rows.mul(per_sample_weights->to(type).unsqueeze(1));
  }
  return rows.mul(bags.valid.to(type).unsqueeze(1));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> embedding_bag(
    const char* op_name, bool forward_only, const at::Tensor& weight, const at::Tensor& indices,
    const at::Tensor& offsets, int64_t mode, const std::optional<at::Tensor>& per_sample_weights,
    bool include_last_offset, int64_t padding_idx) {
  record_op(op_name, OpPath::kCompiled);
  check_arguments(weight, indices, offsets, mode, per_sample_weights);
  const at::ScalarType type = weight.scalar_type();
  const bool fast_sum = mode == kSum && padding_idx < 0 && type != at::kDouble;
  Bags bags = make_bags(weight, indices, offsets, include_last_offset, padding_idx);
  const int64_t width = weight.size(1);
  const auto index_options = bags.indices.options().dtype(bags.index_type);
  at::Tensor bag_size = at::zeros({bags.count}, bags.indices.options());
  at::index_add_out(bag_size, bag_size, 0, bags.offset2bag, bags.valid.to(at::kLong));
  at::Tensor output, max_indices;
  if (mode == kMax) {
    const int64_t length = bags.indices.numel();
    at::Tensor rows = weight.index_select(0, bags.indices);
    const double lowest = -std::numeric_limits<double>::infinity();
    at::Tensor candidates = rows.masked_fill(bags.valid.logical_not().unsqueeze(1), lowest);
    at::Tensor target = bags.offset2bag.unsqueeze(1).expand({length, width});
    at::Tensor maximum = at::full({bags.count, width}, lowest, weight.options());
    at::scatter_reduce_out(maximum, maximum, 0, target, candidates, "amax", true);
    // The first position in its bag holding the maximum, per column.
    at::Tensor hits = candidates.eq(maximum.index_select(0, bags.offset2bag)).logical_and(bags.valid.unsqueeze(1));
    at::Tensor positions = at::arange(length, bags.indices.options()).unsqueeze(1).expand({length, width});
    positions = at::where(hits, positions, at::full({}, length, positions.options()));
    at::Tensor first = at::full({bags.count, width}, length, bags.indices.options());
    at::scatter_reduce_out(first, first, 0, target, positions, "amin", true);
    at::Tensor found = first.lt(length);
    at::Tensor rows_of = length > 0 ? bags.indices.index_select(0, first.clamp_max(length - 1).reshape(-1))
                                          .view({bags.count, width})
                                    : at::zeros({bags.count, width}, bags.indices.options());
    max_indices = at::where(found, rows_of, at::zeros({}, rows_of.options())).to(bags.index_type);
    output = at::where(found, maximum, at::zeros({}, maximum.options()));
  } else {
    const at::ScalarType accumulate = accumulate_type(weight);
    at::Tensor rows = gathered_rows(weight, bags, per_sample_weights, accumulate);
    at::Tensor sums = at::zeros({bags.count, width}, rows.options());
    at::index_add_out(sums, sums, 0, bags.offset2bag, rows);
    if (mode == kMean) sums = sums.div(bag_size.clamp_min(1).to(accumulate).unsqueeze(1));
    output = sums.to(type);
    // 'sum' leaves bag_size and max_indices zero; forward_only sizes them
    // by offsets (one more with include_last_offset), as the CPU.
    const int64_t zeros = forward_only ? offsets.numel() : bags.count;
    max_indices = mode == kMean ? bag_size.to(bags.index_type) : at::zeros({zeros}, index_options);
  }
  at::Tensor offset2bag = bags.offset2bag.to(bags.index_type);
  // The CPU skips offset2bag on its 'sum' fast path, whether or not autograd
  // runs (its backward rebuilds it from offsets).
  if (fast_sum) offset2bag = at::empty({0}, index_options);
  at::Tensor sizes = mode == kSum ? at::zeros_like(max_indices) : bag_size.to(bags.index_type);
  return {output, offset2bag, sizes, max_indices};
}

// The forward's 'sum' fast path leaves offset2bag empty; the backwards then
// rebuild it from every offset, as the CPU does. int64, on device.
at::Tensor offset2bag_or_rebuilt(const at::Tensor& index, const at::Tensor& offsets,
                                 const at::Tensor& offset2bag) {
  if (offset2bag.numel() != 0 || index.numel() == 0) return offset2bag.to(at::kLong);
  at::Tensor starts = at::zeros({index.numel() + 1}, index.options());
  at::Tensor all_offsets = offsets.to(at::kLong);
  at::index_add_out(starts, starts, 0, all_offsets, at::ones({all_offsets.numel()}, starts.options()));
  at::Tensor scanned = at::empty_like(starts);
  at::cumsum_out(scanned, starts, 0);
  return scanned.narrow(0, 0, index.numel()).sub(1);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _embedding_bag(
    const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets, bool,
    int64_t mode, bool, const std::optional<at::Tensor>& per_sample_weights,
    bool include_last_offset, int64_t padding_idx) {
  return embedding_bag("aten::_embedding_bag", false, weight, indices, offsets, mode,
                       per_sample_weights, include_last_offset, padding_idx);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _embedding_bag_forward_only(
    const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets, bool,
    int64_t mode, bool, const std::optional<at::Tensor>& per_sample_weights,
    bool include_last_offset, int64_t padding_idx) {
  return embedding_bag("aten::_embedding_bag_forward_only", true, weight, indices, offsets, mode,
                       per_sample_weights, include_last_offset, padding_idx);
}

at::Tensor _embedding_bag_backward(
    const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offsets,
    const at::Tensor& offset2bag, const at::Tensor& bag_size, const at::Tensor& maximum_indices,
    int64_t num_weights, bool scale_grad_by_freq, int64_t mode, bool sparse,
    const std::optional<at::Tensor>& per_sample_weights, int64_t padding_idx) {
  record_op("aten::_embedding_bag_backward", OpPath::kCompiled);
  at::checkScalarTypes("embedding_bag", at::TensorArg(indices, "indices", 1), {at::kLong, at::kInt});
  at::checkContiguous("embedding_bag", at::TensorArg(indices, "indices", 1));
  at::Tensor bag = offset2bag_or_rebuilt(indices.to(at::kLong), offsets, offset2bag);
  if (sparse) {
    // A sparse gradient: kiln holds no sparse tensors, so this one op leaves
    // the device (tracked by the fallback).
    return at::_embedding_bag_sparse_backward(grad, indices, offsets, bag, bag_size, num_weights,
                                              scale_grad_by_freq, mode, per_sample_weights,
                                              padding_idx);
  }
  return at::_embedding_bag_dense_backward(grad, indices, bag, bag_size, maximum_indices,
                                           num_weights, scale_grad_by_freq, mode,
                                           per_sample_weights, padding_idx);
}

at::Tensor _embedding_bag_dense_backward(
    const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offset2bag,
    const at::Tensor& bag_size, const at::Tensor& maximum_indices, int64_t num_weights,
    bool scale_grad_by_freq, int64_t mode, const std::optional<at::Tensor>& per_sample_weights,
    int64_t padding_idx) {
  record_op("aten::_embedding_bag_dense_backward", OpPath::kCompiled);
  const int64_t width = grad.size(1);
  at::Tensor index = indices.to(at::kLong);
  if (mode == kMax) {
    // Each bag's gradient goes to the row that held its maximum; empty
    // bags (bag_size 0) send nothing.
    at::Tensor result = at::zeros({num_weights, width}, grad.options());
    at::Tensor live = bag_size.gt(0).unsqueeze(1).to(grad.scalar_type());
    at::Tensor source = grad.mul(live);
    at::scatter_add_out(result, result, 0, maximum_indices.to(at::kLong), source);
    return result;
  }
  TORCH_CHECK(offset2bag.numel() == index.numel(), "embedding_bag backward: offset2bag has ",
              offset2bag.numel(), " elements but indices has ", index.numel());
  at::Tensor bag = offset2bag.to(at::kLong);
  at::Tensor rows = grad.index_select(0, bag);
  if (mode == kMean) rows = rows.div(bag_size.to(at::kLong).index_select(0, bag).clamp_min(1).to(grad.scalar_type()).unsqueeze(1));
  if (per_sample_weights.has_value() && per_sample_weights->defined()) {
    rows = rows.mul(per_sample_weights->unsqueeze(1));
  }
  return at::embedding_dense_backward(rows, index, num_weights, padding_idx, scale_grad_by_freq);
}

at::Tensor _embedding_bag_per_sample_weights_backward(
    const at::Tensor& grad, const at::Tensor& weight, const at::Tensor& indices,
    const at::Tensor& offsets, const at::Tensor& offset2bag, int64_t mode, int64_t padding_idx) {
  record_op("aten::_embedding_bag_per_sample_weights_backward", OpPath::kCompiled);
  TORCH_CHECK(mode == kSum, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  at::Tensor index = indices.to(at::kLong);
  at::Tensor bag = offset2bag_or_rebuilt(index, offsets, offset2bag);
  at::Tensor rows = weight.index_select(0, index);
  at::Tensor grads = grad.index_select(0, bag);
  at::Tensor result = rows.mul(grads).sum(1);
  if (padding_idx >= 0) result = result.mul(index.ne(padding_idx).to(result.scalar_type()));
  return result;
}

}  // namespace kiln::torch_integration::compiled
