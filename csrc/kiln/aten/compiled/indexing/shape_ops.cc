#include "kiln/aten/compiled/indexing/shape_ops.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorShape.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include <map>

#include "kiln/aten/compiled/launch/indexed_kernel.h"
#include "kiln/aten/device_checks.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

// What ATen's cat meta function decides: the output's shape, dtype, memory
// format, and the inputs that take part.
struct CatPlan {
  int64_t dim = 0;
  c10::DimVector sizes{0};
  at::ScalarType dtype;
  at::TensorOptions options;
  c10::MemoryFormat memory_format = c10::MemoryFormat::Contiguous;
  bool found_valid = false;
};

c10::MemoryFormat output_memory_format(const at::MaterializedITensorListRef& inputs) {
  std::optional<c10::MemoryFormat> format;
  for (const at::Tensor& tensor : inputs) {
    c10::MemoryFormat suggested = tensor.suggest_memory_format();
    if (suggested == c10::MemoryFormat::Contiguous) return suggested;
    if (format.has_value() && *format != suggested) return c10::MemoryFormat::Contiguous;
    format = suggested;
  }
  return format.value();
}

CatPlan plan_cat(const at::ITensorListRef& tensors, int64_t dim, const at::Tensor* out) {
  auto materialized = tensors.materialize();
  at::native::check_cat_no_zero_dim(materialized);
  CatPlan plan;
  plan.dim = at::legacy_cat_wrap_dim(dim, materialized);
  TORCH_CHECK_VALUE(!materialized.empty(), "torch.cat(): expected a non-empty list of Tensors");
  size_t valid = materialized.size();
  for (size_t i = 0; i < materialized.size(); ++i) {
    if (!at::native::cat_should_skip_tensor(materialized[i].get())) {
      valid = i;
      break;
    }
  }
  plan.memory_format = output_memory_format(materialized);
  plan.dtype = at::native::result_type(tensors);
  if (out != nullptr) {
    TORCH_CHECK_TYPE(at::canCast(plan.dtype, out->scalar_type()),
                     "torch.cat(): input types can't be cast to the desired output type ",
                     out->scalar_type());
    plan.dtype = out->scalar_type();
  }
  const at::Tensor& first = materialized[0].get();
  plan.options = first.options().dtype(plan.dtype);
  for (const at::Tensor& tensor : materialized) {
    check_same_device(first.device(), tensor);
  }
  plan.found_valid = valid < materialized.size();
  if (plan.found_valid) {
    const at::Tensor& reference = materialized[valid].get();
    TORCH_CHECK_INDEX(plan.dim <= reference.dim(), "torch.cat(): dimension ", plan.dim,
                      "out of range");
    int64_t size_at_dim = 0;
    for (size_t i = 0; i < materialized.size(); ++i) {
      const at::Tensor& tensor = materialized[i].get();
      if (at::native::cat_should_skip_tensor(tensor)) continue;
      at::native::check_cat_shape_except_dim(reference, tensor, plan.dim, static_cast<int64_t>(i));
      size_at_dim += tensor.size(plan.dim);
    }
    plan.sizes.assign(reference.sizes().begin(), reference.sizes().end());
    plan.sizes[plan.dim] = size_at_dim;
    plan.options = reference.options().dtype(plan.dtype);
  }
  return plan;
}

// Copies every non-skipped input into its slice of `out`.
void copy_slices(const at::ITensorListRef& tensors, const CatPlan& plan, const at::Tensor& out) {
  if (out.numel() == 0) return;
  int64_t offset = 0;
  for (const at::Tensor& tensor : tensors) {
    if (at::native::cat_should_skip_tensor(tensor)) continue;
    int64_t length = tensor.size(plan.dim);
    if (length > 0) copy_tensor("aten::cat.out", out.narrow(plan.dim, offset, length), tensor);
    offset += length;
  }
}

}  // namespace

at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  record_op("aten::cat.out", OpPath::kCompiled);
  CatPlan plan = plan_cat(tensors, dim, &out);
  TORCH_CHECK(plan.options.device() == out.device(), "Expected out tensor to have device ",
              plan.options.device(), ", but got ", out.device(), " instead");
  if (at::native::resize_output(out, plan.sizes)) {
    out.unsafeGetTensorImpl()->empty_tensor_restride(plan.memory_format);
  }
  if (plan.found_valid) {
    at::assert_no_internal_overlap(out);
    for (const at::Tensor& tensor : tensors) at::assert_no_overlap(out, tensor);
  }
  copy_slices(tensors, plan, out);
  return out;
}

at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  record_op("aten::cat", OpPath::kCompiled);
  CatPlan plan = plan_cat(tensors, dim, nullptr);
  at::Tensor out = at::empty(plan.sizes, plan.options.memory_format(plan.memory_format));
  copy_slices(tensors, plan, out);
  return out;
}

// A copy reading `self` backwards along the flipped dims.
at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims) {
  record_op("aten::flip", OpPath::kCompiled);
  auto flipped = at::dim_list_to_bitset(dims, self.dim());
  at::Tensor out = at::empty_like(self, c10::MemoryFormat::Preserve);
  if (self.numel() == 0) return out;
  c10::DimVector strides(self.strides().begin(), self.strides().end());
  int64_t offset = 0;
  for (int64_t dim = 0; dim < self.dim(); ++dim) {
    if (!flipped[dim]) continue;
    offset += (self.size(dim) - 1) * strides[dim];
    strides[dim] = -strides[dim];
  }
  copy_kernel("aten::flip", self.sizes(), operand_of(out),
              operand_with_strides(self, strides, offset));
  return out;
}

// Rolls along every dim at once: the output is up to 2^k rectangular blocks,
// each a strided copy of a block of the input.
at::Tensor roll(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  record_op("aten::roll", OpPath::kCompiled);
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {
    at::Tensor flat = self.contiguous().view(self.numel());
    const int64_t first_dim = 0;
    return compiled::roll(flat, shifts, at::IntArrayRef(first_dim)).view(self.sizes());
  }
  TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ",
              shifts.size(), ", dims:", dims.size());
  // Total shift per dim (a dim may repeat), reduced into [0, size).
  std::map<int64_t, int64_t> shift_of;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t dim = at::maybe_wrap_dim(dims[i], self.dim());
    int64_t size = self.size(dim);
    if (size == 0) continue;
    int64_t shift = ((shifts[i] % size) + size) % size;
    shift_of[dim] = (shift_of[dim] + shift) % size;
  }
  at::Tensor out = at::empty_like(self, c10::MemoryFormat::Preserve);
  if (self.numel() == 0) return out;
  std::vector<std::pair<int64_t, int64_t>> rolled;  // (dim, shift) with shift != 0
  for (auto [dim, shift] : shift_of) {
    if (shift != 0) rolled.emplace_back(dim, shift);
  }
  const size_t blocks = size_t{1} << rolled.size();
  for (size_t block = 0; block < blocks; ++block) {
    at::Tensor destination = out;
    at::Tensor source = self;
    for (size_t k = 0; k < rolled.size(); ++k) {
      auto [dim, shift] = rolled[k];
      int64_t size = self.size(dim);
      // Block 0 of a dim: out[shift:] = in[:size - shift]; block 1: out[:shift] = in[size - shift:].
      if ((block >> k) & 1) {
        destination = destination.narrow(dim, 0, shift);
        source = source.narrow(dim, size - shift, shift);
      } else {
        destination = destination.narrow(dim, shift, size - shift);
        source = source.narrow(dim, 0, size - shift);
      }
    }
    copy_tensor("aten::roll", destination, source);
  }
  return out;
}

}  // namespace kiln::torch_integration::compiled
