// cummax, cummin and logcumsumexp as row kernels (see cumulative_ops.h).
#include "kiln/aten/compiled/reduction/cumulative_ops.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>

#include <string>

#include "kiln/aten/compiled/launch/row_kernel.h"

namespace kiln::torch_integration::compiled {
namespace {

// Operands (self, values, indices). COMPARE is >= for cummax, <= for cummin:
// a tie takes the later index, as the CPU's loop does.
const char* kRunningExtreme = R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const int64_t n = lengths[0];
  const value_t* input = (const value_t*)rows[0];
  value_t* values = (value_t*)rows[1];
  int64_t* indices = (int64_t*)rows[2];
  if (n == 0) return;
  value_compute best = value_load(input[0]);
  int64_t best_index = 0;
  for (int64_t i = 0; i < n; ++i) {
    value_compute current = value_load(input[i * steps[0]]);
    if (value_is_nan(current) || (!value_is_nan(best) && current COMPARE best)) {
      best = current;
      best_index = i;
    }
    values[i * steps[1]] = value_store(best);
    indices[i * steps[2]] = best_index;
  }
}
)KILN";

// Operands (self, result). ACCUMULATE is the accumulate type; EXP and LOG1P
// its functions.
const char* kLogCumSumExp = R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const int64_t n = lengths[0];
  const value_t* input = (const value_t*)rows[0];
  value_t* result = (value_t*)rows[1];
  ACCUMULATE sum = -__builtin_inf();
  for (int64_t i = 0; i < n; ++i) {
    ACCUMULATE x = (ACCUMULATE)value_load(input[i * steps[0]]);
    /* min and max as std::min/std::max(x, sum) pick them (a NaN x is kept),
       except that a NaN sum stays NaN; two equal infinities stay themselves. */
    ACCUMULATE low = sum != sum ? sum : (sum < x ? sum : x);
    ACCUMULATE high = sum != sum ? sum : (x < sum ? sum : x);
    if (low != high || __builtin_isfinite(low)) sum = LOG1P(EXP(low - high)) + high;
    else sum = x;
    result[i * steps[1]] = value_store((value_compute)sum);
  }
}
)KILN";

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

void running_extreme(const char* op_name, const char* kernel, bool maximum, const at::Tensor& self,
                     at::Tensor& values, at::Tensor& indices, int64_t dim) {
  const c10::ScalarType type = self.scalar_type();
  bool supported = type == at::kBool || type == at::kByte || type == at::kChar || type == at::kShort ||
                   type == at::kInt || type == at::kLong || type == at::kHalf || type == at::kBFloat16 ||
                   type == at::kFloat || type == at::kDouble;
  TORCH_CHECK_NOT_IMPLEMENTED(supported, "\"", kernel, "\" not implemented for '", c10::toString(type), "'");
  if (self.numel() == 0) return;
  std::string element = row_element_type(type, "value", op_name);
  const char* direction = maximum ? "cummax" : "cummin";
  std::string signature = std::string(direction) + "|" + row_dtype_name(type);
  std::string name = std::string(direction) + "_" + row_dtype_name(type);
  RowLaunch launch{op_name, signature, name,
                   [&]() { return element + replace_all(kRunningExtreme, "COMPARE", maximum ? ">=" : "<="); }};
  launch.dim = self.dim() == 0 ? 0 : at::maybe_wrap_dim(dim, self.dim());
  launch_rows(launch, {self, values, indices});
}

}  // namespace

void cummax_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  running_extreme("aten::_cummax_helper", "cummax_cpu", true, self, values, indices, dim);
}

void cummin_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  running_extreme("aten::_cummin_helper", "cummin_cpu", false, self, values, indices, dim);
}

at::Tensor logcumsumexp(const at::Tensor& self, int64_t dim) {
  at::Tensor result = at::empty(self.sizes(), self.options());
  return logcumsumexp_out(self, dim, result);
}

at::Tensor& logcumsumexp_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  const c10::ScalarType type = self.scalar_type();
  bool floating = type == at::kHalf || type == at::kBFloat16 || type == at::kFloat || type == at::kDouble;
  TORCH_CHECK_NOT_IMPLEMENTED(floating, "\"logcumsumexp_out_cpu\" not implemented for '", c10::toString(type),
                              "'");
  TORCH_CHECK(out.scalar_type() == type, "Expected out tensor to have dtype ", type, ", but got ",
              out.scalar_type(), " instead");
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  const bool half = type == at::kHalf || type == at::kBFloat16;
  std::string element = row_element_type(type, "value", "aten::_logcumsumexp");
  std::string signature = std::string("logcumsumexp|") + row_dtype_name(type);
  std::string name = std::string("logcumsumexp_") + row_dtype_name(type);
  RowLaunch launch{"aten::_logcumsumexp", signature, name, [&]() {
                     std::string text = replace_all(kLogCumSumExp, "ACCUMULATE", half ? "float" : "double");
                     text = replace_all(std::move(text), "LOG1P", half ? "__builtin_log1pf" : "__builtin_log1p");
                     return element + replace_all(std::move(text), "EXP", half ? "__builtin_expf" : "__builtin_exp");
                   }};
  launch.dim = self.dim() == 0 ? 0 : dim;
  launch.cost_per_element = 8;
  launch_rows(launch, {self, out});
  return out;
}

}  // namespace kiln::torch_integration::compiled
