// repeat_interleave.Tensor as a row kernel (see repeat_interleave_ops.h).
#include "kiln/aten/compiled/sort/repeat_interleave_ops.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/min.h>
#include <ATen/ops/sum.h>

#include <string>

#include "kiln/aten/compiled/launch/row_kernel.h"

namespace kiln::torch_integration::compiled {
namespace {

// Operands (repeats [n], out [total]); never writes past `total`.
const char* kRepeat = R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const value_t* repeats = (const value_t*)rows[0];
  value_t* out = (value_t*)rows[1];
  const int64_t n = lengths[0], total = lengths[1];
  int64_t position = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t copy = 0; copy < (int64_t)repeats[i * steps[0]] && position < total; ++copy) {
      out[position++ * steps[1]] = (value_t)i;
    }
  }
}
)KILN";

}  // namespace

at::Tensor repeat_interleave(const at::Tensor& repeats, std::optional<c10::SymInt> output_size) {
  const char* op_name = "aten::repeat_interleave.Tensor";
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  const c10::ScalarType type = repeats.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kLong || type == at::kInt, "\"repeat_interleave_cpu\" not implemented for '",
                              c10::toString(type), "'");
  if (repeats.numel() == 0) return at::empty({0}, repeats.options());
  // Both reads below wait for the stream.
  TORCH_CHECK(at::min(repeats).item<int64_t>() >= 0, "repeats can not be negative");
  const int64_t total = at::sum(repeats, at::kLong).item<int64_t>();
  if (output_size.has_value()) {
    TORCH_CHECK(output_size->guard_int(__FILE__, __LINE__) == total, "allocated size does not match required size");
  }
  at::Tensor out = at::empty({total}, repeats.options());
  if (total == 0) return out;
  std::string element = row_element_type(type, "value", op_name);
  std::string signature = std::string("repeat_interleave|") + row_dtype_name(type);
  std::string name = std::string("repeat_interleave_") + row_dtype_name(type);
  RowLaunch launch{op_name, signature, name, [&]() { return element + kRepeat; }};
  launch.dim = 0;
  launch_rows(launch, {repeats, out});
  return out;
}

}  // namespace kiln::torch_integration::compiled
