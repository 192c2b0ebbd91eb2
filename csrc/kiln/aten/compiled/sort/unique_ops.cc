// unique, unique_consecutive and isin (see unique_ops.h).
#include "kiln/aten/compiled/sort/unique_ops.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/isin_meta.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/scalar_tensor.h>

#include <string>

#include "kiln/aten/compiled/launch/row_kernel.h"
#include "kiln/aten/compiled/sort/sort_ops.h"
#include "kiln/aten/compiled/launch/structured_run.h"

namespace kiln::torch_integration::compiled {
namespace {

// Operands (data [m * width], [permutation [m],] starts [m], counts [m],
// inverse [m], groups [1]); scalars[0] = width. Rows of `width` elements
// (contiguous) are compared with ==; a new run starts where any differs.
const char* kRuns = R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const value_t* data = (const value_t*)rows[0];
#if KILN_PERMUTED
  const int64_t* permutation = (const int64_t*)rows[1];
  const int first = 2;
#else
  const int first = 1;
#endif
  int64_t* starts = (int64_t*)rows[first];
  int64_t* counts = (int64_t*)rows[first + 1];
  int64_t* inverse = (int64_t*)rows[first + 2];
  const int64_t m = lengths[first];
  const int64_t width = args->scalars[0].integer;
  int64_t groups = 0;
  for (int64_t i = 0; i < m; ++i) {
    int fresh = i == 0;
    for (int64_t j = 0; !fresh && j < width; ++j) {
      value_compute a = value_load(data[(i * width + j) * steps[0]]);
      value_compute b = value_load(data[((i - 1) * width + j) * steps[0]]);
      if (!(a == b)) fresh = 1;
    }
    if (fresh) {
      starts[groups] = i;
      counts[groups] = 0;
      ++groups;
    }
    counts[groups - 1] += 1;
#if KILN_PERMUTED
    inverse[permutation[i * steps[1]]] = groups - 1;
#else
    inverse[i] = groups - 1;
#endif
  }
  *(int64_t*)rows[first + 3] = groups;
}
)KILN";

void check_unique_dtype(const at::Tensor& self) {
  const c10::ScalarType type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(row_dtype_name(type) != nullptr, "\"unique\" not implemented for '",
                              c10::toString(type), "'");
}

struct Runs {
  at::Tensor starts, counts, inverse;
  int64_t groups = 0;
};

// The runs of equal rows of `data` (contiguous, m rows of `width`), with the
// inverse written through `permutation` when defined.
Runs find_runs(const char* op_name, const at::Tensor& data, int64_t m, int64_t width,
               const at::Tensor& permutation) {
  const at::TensorOptions index_options = data.options().dtype(at::kLong);
  Runs runs{at::empty({m}, index_options), at::empty({m}, index_options), at::empty({m}, index_options)};
  at::Tensor groups = at::empty({1}, index_options);
  const c10::ScalarType type = data.scalar_type();
  const bool permuted = permutation.defined();
  std::string element = row_element_type(type, "value", op_name);
  std::string signature = std::string("unique_runs|") + row_dtype_name(type) + (permuted ? "|permuted" : "|plain");
  std::string name = std::string("unique_runs_") + row_dtype_name(type) + (permuted ? "_permuted" : "");
  RowLaunch launch{op_name, signature, name, [&]() {
                     return element + (permuted ? "#define KILN_PERMUTED 1\n" : "#define KILN_PERMUTED 0\n") + kRuns;
                   }};
  launch.dim = 0;
  launch.inputs = permuted ? 2 : 1;
  launch.scalars[0] = width;
  at::Tensor flat = data.reshape({-1});
  if (permuted) launch_rows(launch, {flat, permutation, runs.starts, runs.counts, runs.inverse, groups});
  else launch_rows(launch, {flat, runs.starts, runs.counts, runs.inverse, groups});
  // The output size depends on the data: wait for it (synchronizes).
  runs.groups = groups.item<int64_t>();
  runs.starts = runs.starts.narrow(0, 0, runs.groups);
  runs.counts = runs.counts.narrow(0, 0, runs.groups);
  return runs;
}

at::Tensor empty_indices(const at::Tensor& like) { return at::empty({0}, like.options().dtype(at::kLong)); }

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool sorted, bool return_inverse,
                                                       bool return_counts) {
  const char* op_name = "aten::_unique2";
  check_unique_dtype(self);
  // The CPU sorts whether or not `sorted` is asked for.
  if (self.numel() == 0) {
    return {at::empty({0}, self.options()),
            return_inverse ? at::empty(self.sizes(), self.options().dtype(at::kLong)) : empty_indices(self),
            empty_indices(self)};
  }
  at::Tensor flat = self.reshape({-1});
  at::Tensor values = at::empty(flat.sizes(), flat.options());
  at::Tensor permutation = at::empty(flat.sizes(), flat.options().dtype(at::kLong));
  // The CPU's unstable sort: it decides the order of the (never equal) NaNs,
  // which the inverse shows.
  sort_into(op_name, flat, 0, /*descending=*/false, /*stable=*/false, values, permutation);
  Runs runs = find_runs(op_name, values, flat.numel(), 1, permutation);
  at::Tensor output = at::index_select(values, 0, runs.starts);
  at::Tensor inverse = return_inverse ? runs.inverse.view(self.sizes()) : empty_indices(self);
  at::Tensor counts = return_counts ? runs.counts : empty_indices(self);
  return {output, inverse, counts};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive(const at::Tensor& self, bool return_inverse,
                                                                  bool return_counts,
                                                                  std::optional<int64_t> dim) {
  const char* op_name = "aten::unique_consecutive";
  check_unique_dtype(self);
  if (!dim.has_value() || self.dim() == 0) {
    if (self.numel() == 0) {
      return {at::empty({0}, self.options()),
              return_inverse ? at::empty(self.sizes(), self.options().dtype(at::kLong)) : empty_indices(self),
              empty_indices(self)};
    }
    at::Tensor flat = self.reshape({-1}).contiguous();
    Runs runs = find_runs(op_name, flat, flat.numel(), 1, at::Tensor());
    return {at::index_select(flat, 0, runs.starts),
            return_inverse ? runs.inverse.view(self.sizes()) : empty_indices(self),
            return_counts ? runs.counts : empty_indices(self)};
  }
  const int64_t wrapped = at::maybe_wrap_dim(*dim, self.dim());
  TORCH_CHECK(self.numel() != 0 || self.size(wrapped) == 0,
              "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  at::Tensor moved = self.movedim(wrapped, 0).contiguous();
  const int64_t m = moved.size(0);
  const int64_t width = m == 0 ? 0 : moved.numel() / m;
  // Along a dim the CPU returns the inverse and counts even when not asked.
  if (m == 0) return {self.clone(), empty_indices(self), empty_indices(self)};
  Runs runs = find_runs(op_name, moved, m, width, at::Tensor());
  at::Tensor output = at::index_select(moved, 0, runs.starts).movedim(0, wrapped).contiguous();
  return {output, runs.inverse, runs.counts};
}

namespace {

// Operands (element, sorted test elements, out): one element per row.
// scalars[0] = invert.
const char* kMember = R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const value_compute v = value_load(*(const value_t*)rows[0]);
  const value_t* sorted = (const value_t*)rows[1];
  const int64_t n = lengths[1];
  int64_t low = 0, high = n;
  while (low < high) {
    int64_t middle = low + ((high - low) >> 1);
    if (!(value_load(sorted[middle * steps[1]]) >= v)) low = middle + 1; else high = middle;
  }
  const int found = low < n && value_load(sorted[low * steps[1]]) == v;
  *(uint8_t*)rows[2] = (uint8_t)(found ^ (int)args->scalars[0].integer);
}
)KILN";

// `common`: the promoted dtype the comparisons use.
void isin_into(const at::Tensor& elements, const at::Tensor& test_elements, c10::ScalarType common, bool invert,
               at::Tensor& out) {
  const char* op_name = "aten::isin.Tensor_Tensor_out";
  // The Scalar_Tensor meta sizes its output {0}; the result has the
  // elements' shape (a Scalar's is 0-d).
  at::native::resize_output(out, elements.sizes());
  if (elements.numel() == 0) return;
  if (test_elements.numel() == 0) {
    out.fill_(invert);
    return;
  }
  TORCH_CHECK(common != at::kBool, "Unsupported input type encountered for isin(): ", common);
  TORCH_CHECK_NOT_IMPLEMENTED(row_dtype_name(common) != nullptr, "\"isin_default_cpu\" not implemented for '",
                              c10::toString(common), "'");
  at::Tensor flat_elements = elements.to(common).reshape({-1, 1});
  at::Tensor flat_test = test_elements.to(common).reshape({-1});
  at::Tensor sorted = at::empty(flat_test.sizes(), flat_test.options());
  at::Tensor order = at::empty(flat_test.sizes(), flat_test.options().dtype(at::kLong));
  sort_into(op_name, flat_test, 0, /*descending=*/false, /*stable=*/true, sorted, order);
  at::Tensor result = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  std::string element = row_element_type(common, "value", op_name);
  std::string signature = std::string("isin|") + row_dtype_name(common);
  std::string name = std::string("isin_") + row_dtype_name(common);
  RowLaunch launch{op_name, signature, name, [&]() { return element + kMember; }};
  launch.dim = 1;
  launch.inputs = 2;
  launch.scalars[0] = invert ? 1 : 0;
  launch.cost_per_element = 2;
  launch_rows(launch, {flat_elements, sorted.unsqueeze(0).expand({flat_elements.size(0), sorted.size(0)}),
                       result.reshape({-1, 1})});
  if (!result.is_same(out)) out.copy_(result);
}

// A Scalar operand promotes as in binary ops (a wrapped number), so the
// common dtype comes from at::result_type(Tensor, Scalar).
at::Tensor scalar_on_device(const at::Scalar& value, const at::Tensor& like, c10::ScalarType common) {
  return at::scalar_tensor(value, like.options().dtype(common));
}

}  // namespace

at::Tensor& isin_out(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique,
                     bool invert, at::Tensor& out) {
  structured<at::meta::structured_isin_Tensor_Tensor>(&out, [&](at::Tensor& result) {
    isin_into(elements, test_elements, at::result_type(elements, test_elements), invert, result);
  }, elements, test_elements, assume_unique, invert);
  return out;
}

at::Tensor isin(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique, bool invert) {
  return structured<at::meta::structured_isin_Tensor_Tensor>(nullptr, [&](at::Tensor& result) {
    isin_into(elements, test_elements, at::result_type(elements, test_elements), invert, result);
  }, elements, test_elements, assume_unique, invert);
}

at::Tensor& isin_tensor_scalar_out(const at::Tensor& elements, const at::Scalar& test_element,
                                   bool assume_unique, bool invert, at::Tensor& out) {
  structured<at::meta::structured_isin_Tensor_Scalar>(&out, [&](at::Tensor& result) {
    const c10::ScalarType common = at::result_type(elements, test_element);
    isin_into(elements, scalar_on_device(test_element, elements, common), common, invert, result);
  }, elements, test_element, assume_unique, invert);
  return out;
}

at::Tensor isin_tensor_scalar(const at::Tensor& elements, const at::Scalar& test_element, bool assume_unique,
                              bool invert) {
  return structured<at::meta::structured_isin_Tensor_Scalar>(nullptr, [&](at::Tensor& result) {
    const c10::ScalarType common = at::result_type(elements, test_element);
    isin_into(elements, scalar_on_device(test_element, elements, common), common, invert, result);
  }, elements, test_element, assume_unique, invert);
}

at::Tensor& isin_scalar_tensor_out(const at::Scalar& element, const at::Tensor& test_elements,
                                   bool assume_unique, bool invert, at::Tensor& out) {
  structured<at::meta::structured_isin_Scalar_Tensor>(&out, [&](at::Tensor& result) {
    const c10::ScalarType common = at::result_type(element, test_elements);
    isin_into(scalar_on_device(element, test_elements, common), test_elements, common, invert, result);
  }, element, test_elements, assume_unique, invert);
  return out;
}

at::Tensor isin_scalar_tensor(const at::Scalar& element, const at::Tensor& test_elements, bool assume_unique,
                              bool invert) {
  return structured<at::meta::structured_isin_Scalar_Tensor>(nullptr, [&](at::Tensor& result) {
    const c10::ScalarType common = at::result_type(element, test_elements);
    isin_into(scalar_on_device(element, test_elements, common), test_elements, common, invert, result);
  }, element, test_elements, assume_unique, invert);
}

}  // namespace kiln::torch_integration::compiled
