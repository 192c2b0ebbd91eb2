// sort.stable and sort.values_stable as row kernels (see sort_ops.h).
#include "kiln/aten/compiled/sort/sort_ops.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/sort_meta.h>

#include <string>

#include "kiln/aten/compiled/launch/row_kernel.h"
#include "kiln/aten/compiled/sort/sort_source.h"
#include "kiln/aten/compiled/launch/structured_outputs.h"

namespace kiln::torch_integration::compiled {

void sort_into(const char* op_name, const at::Tensor& self, int64_t dim, bool descending, bool stable,
               const at::Tensor& values, const at::Tensor& indices) {
  if (self.numel() == 0) return;
  const c10::ScalarType type = self.scalar_type();
  std::string element = row_element_type(type, "value", op_name);
  const char* order = stable ? "stable" : "unstable";
  std::string signature = std::string("sort|") + row_dtype_name(type) + (descending ? "|descending|" : "|ascending|") + order;
  std::string name = std::string("sort_") + row_dtype_name(type) + (descending ? "_descending_" : "_ascending_") + order;
  RowLaunch launch{op_name, signature, name, [&]() {
                     return element + stable_sort_source("value") +
                            (stable ? sort_row_source(descending) : unstable_sort_row_source(descending));
                   }};
  launch.dim = self.dim() == 0 ? 0 : at::maybe_wrap_dim(dim, self.dim());
  launch.inputs = 1;
  launch.scratch_bytes_per_element = 32;
  launch.cost_per_element = 16;
  launch_rows(launch, {self, values, indices});
}

std::tuple<at::Tensor, at::Tensor> sort_stable(const at::Tensor& self, std::optional<bool> stable,
                                               int64_t dim, bool descending) {
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_sort_stable, 2> meta;
  meta.meta(self, stable, dim, descending);
  sort_into("aten::sort.stable", self, dim, descending, stable.value_or(false), meta.output(0), meta.output(1));
  return {meta.output(0), meta.output(1)};
}

std::tuple<at::Tensor&, at::Tensor&> sort_stable_out(const at::Tensor& self, std::optional<bool> stable,
                                                     int64_t dim, bool descending, at::Tensor& values,
                                                     at::Tensor& indices) {
  // Two outputs: structured() (structured_run.h) serves one-output ops only.
  StructuredOutputs<at::meta::structured_sort_stable, 2> meta({values, indices});
  meta.meta(self, stable, dim, descending);
  sort_into("aten::sort.values_stable", self, dim, descending, stable.value_or(false), values, indices);
  return {values, indices};
}

}  // namespace kiln::torch_integration::compiled
