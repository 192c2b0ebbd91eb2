// topk, kthvalue, median, nanmedian and mode as row kernels (see
// selection_ops.h).
#include "kiln/aten/compiled/sort/selection_ops.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/topk_meta.h>

#include <string>

#include "kiln/aten/compiled/launch/row_kernel.h"
#include "kiln/aten/compiled/sort/selection_source.h"
#include "kiln/aten/compiled/launch/structured_outputs.h"

namespace kiln::torch_integration::compiled {
namespace {

// The CPU kernels' dtypes: every real type but bool and the wide unsigned
// types (mode takes bool too). `kernel` is the CPU kernel's name in the error.
void check_dtype(const at::Tensor& self, const char* kernel, bool allow_bool) {
  const c10::ScalarType type = self.scalar_type();
  bool supported = type == at::kByte || type == at::kChar || type == at::kShort || type == at::kInt ||
                   type == at::kLong || type == at::kHalf || type == at::kBFloat16 || type == at::kFloat ||
                   type == at::kDouble || (allow_bool && type == at::kBool);
  TORCH_CHECK_NOT_IMPLEMENTED(supported, "\"", kernel, "\" not implemented for '", c10::toString(type), "'");
}

// Launches a selection row kernel over (self, values, indices).
void launch_selection(const char* op_name, const char* key, const at::Tensor& self, int64_t dim,
                      const at::Tensor& values, const at::Tensor& indices, std::initializer_list<int64_t> scalars,
                      std::string (*source)(bool), bool flag) {
  if (values.numel() == 0) return;
  const c10::ScalarType type = self.scalar_type();
  std::string element = row_element_type(type, "value", op_name);
  std::string signature = std::string(key) + "|" + row_dtype_name(type) + (flag ? "|1" : "|0");
  std::string name = std::string(key) + "_" + row_dtype_name(type) + (flag ? "_1" : "_0");
  RowLaunch launch{op_name, signature, name, [&]() { return element + source(flag); }};
  launch.dim = self.dim() == 0 ? 0 : dim;
  int slot = 0;
  for (int64_t scalar : scalars) launch.scalars[slot++] = scalar;
  launch.scratch_bytes_per_element = 16;  // one (key, index) pair
  launch.cost_per_element = 8;
  launch_rows(launch, {self, values, indices});
}

std::string kthvalue_source(bool) { return kthvalue_row_source(); }
std::string mode_source(bool) { return mode_row_source(); }

// Sizes values/indices for a reduction of `dim` and returns views of them
// that keep `dim` (length 1), for the kernel.
std::tuple<at::Tensor, at::Tensor> reduced_outputs(const at::Tensor& self, int64_t dim, bool keepdim,
                                                   at::Tensor& values, at::Tensor& indices) {
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), "output values must be of same type as input");
  TORCH_CHECK(indices.scalar_type() == at::kLong, "output indices must be of scalar type Long");
  std::vector<int64_t> sizes = self.sizes().vec();
  if (self.dim() > 0) {
    if (keepdim) sizes[dim] = 1;
    else sizes.erase(sizes.begin() + dim);
  }
  at::native::resize_output(values, sizes);
  at::native::resize_output(indices, sizes);
  if (self.dim() == 0 || keepdim) return {values, indices};
  return {values.unsqueeze(dim), indices.unsqueeze(dim)};
}

void check_reduced_dim(const at::Tensor& self, int64_t dim, const char* name) {
  TORCH_CHECK_INDEX(self.numel() != 0 || self.dim() == 0 || self.size(dim) != 0, name,
                    "(): Expected reduction dim ", dim, " to have non-zero size.");
}

std::tuple<at::Tensor&, at::Tensor&> median_impl(const char* op_name, bool ignore_nan, const at::Tensor& self,
                                                 int64_t dim, bool keepdim, at::Tensor& values,
                                                 at::Tensor& indices) {
  check_dtype(self, "median_out", false);
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_reduced_dim(self, dim, "median");
  auto [kept_values, kept_indices] = reduced_outputs(self, dim, keepdim, values, indices);
  launch_selection(op_name, ignore_nan ? "nanmedian" : "median", self, dim, kept_values, kept_indices, {},
                   &median_row_source, ignore_nan);
  return {values, indices};
}

at::Tensor median_all(const char* op_name, bool ignore_nan, const at::Tensor& self) {
  check_dtype(self, "median_cpu", false);
  // Like the CPU: the median of no elements is NaN (for floating types).
  at::Tensor values = at::empty({}, self.options());
  if (self.numel() == 0) {
    values.fill_(std::numeric_limits<double>::quiet_NaN());
    return values;
  }
  at::Tensor indices = at::empty({}, self.options().dtype(at::kLong));
  launch_selection(op_name, ignore_nan ? "nanmedian" : "median", self.reshape({-1}), 0,
                   values.unsqueeze(0), indices.unsqueeze(0), {}, &median_row_source, ignore_nan);
  return values;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& self, int64_t k, int64_t dim, bool largest,
                                        bool sorted) {
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_topk, 2> meta;
  meta.meta(self, k, dim, largest, sorted);
  at::Tensor values = meta.output(0), indices = meta.output(1);
  topk_out(self, k, dim, largest, sorted, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> topk_out(const at::Tensor& self, int64_t k, int64_t dim, bool largest,
                                              bool sorted, at::Tensor& values, at::Tensor& indices) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "topk does not support bool dtypes on CPU");
  check_dtype(self, "topk_cpu", false);
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_topk, 2> meta({values, indices});
  meta.meta(self, k, dim, largest, sorted);
  dim = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  // A 0-d self has a 0-d result even for k = 0, which the CPU fills with self.
  const int64_t selected = self.dim() == 0 ? 1 : k;
  launch_selection("aten::topk.values", "topk", self, dim, values, indices, {selected, sorted ? 1 : 0},
                   &topk_row_source, largest);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> kthvalue_out(const at::Tensor& self, int64_t k, int64_t dim,
                                                  bool keepdim, at::Tensor& values, at::Tensor& indices) {
  check_dtype(self, "kthvalue_cpu", false);
  dim = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  const int64_t length = self.dim() > 0 ? self.size(dim) : 1;
  TORCH_CHECK(k >= 1 && k <= length, "kthvalue(): selected number k out of range for dimension ", dim);
  auto [kept_values, kept_indices] = reduced_outputs(self, dim, keepdim, values, indices);
  launch_selection("aten::kthvalue.values", "kthvalue", self, dim, kept_values, kept_indices, {k},
                   &kthvalue_source, false);
  return {values, indices};
}

at::Tensor median(const at::Tensor& self) { return median_all("aten::median", false, self); }

at::Tensor nanmedian(const at::Tensor& self) { return median_all("aten::nanmedian", true, self); }

std::tuple<at::Tensor&, at::Tensor&> median_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                    at::Tensor& values, at::Tensor& indices) {
  return median_impl("aten::median.dim_values", false, self, dim, keepdim, values, indices);
}

std::tuple<at::Tensor&, at::Tensor&> nanmedian_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                       at::Tensor& values, at::Tensor& indices) {
  return median_impl("aten::nanmedian.dim_values", true, self, dim, keepdim, values, indices);
}

std::tuple<at::Tensor, at::Tensor> mode(const at::Tensor& self, int64_t dim, bool keepdim) {
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  mode_out(self, dim, keepdim, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> mode_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                              at::Tensor& values, at::Tensor& indices) {
  check_dtype(self, "mode_cpu", true);
  dim = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  check_reduced_dim(self, dim, "mode");
  auto [kept_values, kept_indices] = reduced_outputs(self, dim, keepdim, values, indices);
  launch_selection("aten::mode.values", "mode", self, dim, kept_values, kept_indices, {}, &mode_source, false);
  return {values, indices};
}

}  // namespace kiln::torch_integration::compiled
