// searchsorted and bucketize as row kernels (see search_ops.h).
#include "kiln/aten/compiled/sort/search_ops.h"

#include <ATen/native/BucketizationUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>

#include <string>

#include "kiln/aten/compiled/launch/row_kernel.h"

namespace kiln::torch_integration::compiled {
namespace {

// Operands (values, boundaries, [sorter,] out). ABOVE(b, v) is the test that
// moves the search right: !(b >= v) for left, !(b > v) for right.
const char* kSearch = R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const int64_t count = lengths[0], n = lengths[1];
  const value_t* input = (const value_t*)rows[0];
  const value_t* boundaries = (const value_t*)rows[1];
#if KILN_SORTER
  const int64_t* sorter = (const int64_t*)rows[2];
  OUT_T* out = (OUT_T*)rows[3];
  const int64_t out_step = steps[3];
#else
  OUT_T* out = (OUT_T*)rows[2];
  const int64_t out_step = steps[2];
#endif
  for (int64_t i = 0; i < count; ++i) {
    value_compute v = value_load(input[i * steps[0]]);
    int64_t low = 0, high = n;
    while (low < high) {
      int64_t middle = low + ((high - low) >> 1);
#if KILN_SORTER
      value_compute b = value_load(boundaries[sorter[middle * steps[2]] * steps[1]]);
#else
      value_compute b = value_load(boundaries[middle * steps[1]]);
#endif
      if (ABOVE) low = middle + 1; else high = middle;
    }
    out[i * out_step] = (OUT_T)low;
  }
}
)KILN";

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

void search_into(const at::Tensor& raw_boundaries, const at::Tensor& raw_input, bool out_int32, bool right,
                 std::optional<std::string_view> side, const at::Tensor& raw_sorter, at::Tensor& out) {
  const char* op_name = "aten::searchsorted.Tensor";
  at::native::searchsorted_pre_check(raw_boundaries, raw_input, out, out_int32, right, side, raw_sorter);
  at::native::resize_output(out, raw_input.sizes());
  const bool is_right = side ? *side == "right" : right;
  if (raw_input.numel() == 0) return;
  // Compare in the promoted dtype, as the CPU does.
  at::Tensor input = raw_input, boundaries = raw_boundaries;
  if (input.scalar_type() != boundaries.scalar_type()) {
    at::native::ResultTypeState state = {};
    state = at::native::update_result_type_state(raw_boundaries, state);
    state = at::native::update_result_type_state(raw_input, state);
    const c10::ScalarType common = at::native::result_type(state);
    input = input.to(common);
    boundaries = boundaries.to(common);
  }
  const c10::ScalarType type = input.scalar_type();
  // The CPU's dtypes: every real type but bool and the wide unsigned types.
  const bool supported = type == at::kByte || type == at::kChar || type == at::kShort || type == at::kInt ||
                         type == at::kLong || type == at::kHalf || type == at::kBFloat16 ||
                         type == at::kFloat || type == at::kDouble;
  TORCH_CHECK_NOT_IMPLEMENTED(supported, "\"searchsorted_out_cpu\" not implemented for '", c10::toString(type), "'");
  // Rows: the last dim. A 0-d value is a row of one; 1-D boundaries serve
  // every row (stride 0 through the leading dims).
  at::Tensor rows_input = input.dim() == 0 ? input.reshape({1}) : input;
  at::Tensor rows_out = out.dim() == 0 ? out.reshape({1}) : out;
  c10::DimVector leading(rows_input.sizes().begin(), rows_input.sizes().end() - 1);
  c10::DimVector boundary_sizes = leading;
  boundary_sizes.push_back(boundaries.size(-1));
  at::Tensor rows_boundaries = boundaries.dim() == 1 ? boundaries.expand(boundary_sizes) : boundaries;
  const bool has_sorter = raw_sorter.defined();
  at::Tensor rows_sorter = !has_sorter ? at::Tensor()
                           : raw_sorter.dim() == 1 ? raw_sorter.expand(boundary_sizes) : raw_sorter;

  std::string element = row_element_type(type, "value", op_name);
  const char* out_type = out_int32 ? "int32_t" : "int64_t";
  std::string signature = std::string("searchsorted|") + row_dtype_name(type) + (is_right ? "|right" : "|left") +
                          (has_sorter ? "|sorter|" : "|plain|") + out_type;
  std::string name = std::string("searchsorted_") + row_dtype_name(type) + (is_right ? "_right" : "_left") +
                     (has_sorter ? "_sorter" : "") + (out_int32 ? "_i32" : "_i64");
  RowLaunch launch{op_name, signature, name, [&]() {
                     std::string text = replace_all(kSearch, "ABOVE", is_right ? "!(b > v)" : "!(b >= v)");
                     text = replace_all(std::move(text), "OUT_T", out_type);
                     return element + (has_sorter ? "#define KILN_SORTER 1\n" : "#define KILN_SORTER 0\n") + text;
                   }};
  launch.dim = rows_input.dim() - 1;
  launch.inputs = has_sorter ? 3 : 2;
  launch.cost_per_element = 16;
  if (has_sorter) launch_rows(launch, {rows_input, rows_boundaries, rows_sorter, rows_out});
  else launch_rows(launch, {rows_input, rows_boundaries, rows_out});
}

at::Tensor& search_out(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32, bool right,
                       std::optional<std::string_view> side, const std::optional<at::Tensor>& sorter,
                       at::Tensor& out) {
  search_into(sorted_sequence, self, out_int32, right, side, sorter.value_or(at::Tensor()), out);
  return out;
}

at::Tensor empty_result(const at::Tensor& like, bool out_int32) {
  return at::empty({0}, like.options().dtype(out_int32 ? at::kInt : at::kLong));
}

}  // namespace

at::Tensor searchsorted(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32, bool right,
                        std::optional<std::string_view> side, const std::optional<at::Tensor>& sorter) {
  at::Tensor out = empty_result(self, out_int32);
  return search_out(sorted_sequence, self, out_int32, right, side, sorter, out);
}

at::Tensor& searchsorted_out(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32,
                             bool right, std::optional<std::string_view> side,
                             const std::optional<at::Tensor>& sorter, at::Tensor& out) {
  return search_out(sorted_sequence, self, out_int32, right, side, sorter, out);
}

at::Tensor searchsorted_scalar(const at::Tensor& sorted_sequence, const at::Scalar& self, bool out_int32,
                               bool right, std::optional<std::string_view> side,
                               const std::optional<at::Tensor>& sorter) {
  return compiled::searchsorted(sorted_sequence, at::native::searchsorted_scalar_tensor(self, sorted_sequence.device()),
                      out_int32, right, side, sorter);
}

at::Tensor& searchsorted_scalar_out(const at::Tensor& sorted_sequence, const at::Scalar& self, bool out_int32,
                                    bool right, std::optional<std::string_view> side,
                                    const std::optional<at::Tensor>& sorter, at::Tensor& out) {
  return search_out(sorted_sequence, at::native::searchsorted_scalar_tensor(self, sorted_sequence.device()),
                    out_int32, right, side, sorter, out);
}

at::Tensor bucketize(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  TORCH_CHECK(boundaries.dim() == 1, "bucketize only takes 1-dimension boundary tensor, but got dim ",
              boundaries.dim());
  return compiled::searchsorted(boundaries, self, out_int32, right, std::nullopt, std::nullopt);
}

at::Tensor& bucketize_out(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right,
                          at::Tensor& out) {
  TORCH_CHECK(boundaries.dim() == 1, "bucketize only takes 1-dimension boundary tensor, but got dim ",
              boundaries.dim());
  return search_out(boundaries, self, out_int32, right, std::nullopt, std::nullopt, out);
}

at::Tensor bucketize_scalar(const at::Scalar& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  return compiled::bucketize(at::native::searchsorted_scalar_tensor(self, boundaries.device()), boundaries, out_int32,
                   right);
}

}  // namespace kiln::torch_integration::compiled
