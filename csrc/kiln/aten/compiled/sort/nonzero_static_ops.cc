// nonzero_static as a row kernel (see nonzero_static_ops.h).
#include "kiln/aten/compiled/sort/nonzero_static_ops.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>

#include <string>
#include <vector>

#include "kiln/aten/compiled/launch/row_kernel.h"

namespace kiln::torch_integration::compiled {
namespace {

// Operands (data [n], shape [rank], out [size * rank]); scalars[0] =
// fill_value. A nonzero is any value != 0 (NaN included, -0.0 not).
const char* kNonzeroStatic = R"KILN(
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch) {
  const value_t* data = (const value_t*)rows[0];
  const int64_t* shape = (const int64_t*)rows[1];
  int64_t* out = (int64_t*)rows[2];
  const int64_t n = lengths[0], rank = lengths[1], total = lengths[2];
  const int64_t size = total / rank;
  int64_t found = 0;
  for (int64_t i = 0; i < n && found < size; ++i) {
    if (value_load(data[i * steps[0]]) != 0) {
      int64_t rest = i;
      for (int64_t d = rank - 1; d >= 0; --d) {
        out[found * rank + d] = rest % shape[d];
        rest /= shape[d];
      }
      ++found;
    }
  }
  for (int64_t j = found * rank; j < total; ++j) out[j] = args->scalars[0].integer;
}
)KILN";

}  // namespace

at::Tensor& nonzero_static_out(const at::Tensor& self, int64_t size, int64_t fill_value, at::Tensor& out) {
  const char* op_name = "aten::nonzero_static";
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero_static: Expected out tensor to have scalar type Long but got ",
              out.scalar_type());
  const int64_t rank = self.dim();
  at::native::resize_output(out, {size, rank});
  if (size == 0 || rank == 0) return out;
  at::Tensor result = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  if (self.numel() == 0) {
    result.fill_(fill_value);
  } else {
    // The shape, for turning flat positions into coordinates (a small
    // host-to-device copy, queued in stream order).
    at::Tensor shape = at::tensor(self.sizes().vec(), at::TensorOptions().dtype(at::kLong)).to(self.device());
    const c10::ScalarType type = self.scalar_type();
    std::string element = row_element_type(type, "value", op_name);
    std::string signature = std::string("nonzero_static|") + row_dtype_name(type);
    std::string name = std::string("nonzero_static_") + row_dtype_name(type);
    RowLaunch launch{op_name, signature, name, [&]() { return element + kNonzeroStatic; }};
    launch.dim = 0;
    launch.inputs = 2;
    launch.scalars[0] = fill_value;
    launch_rows(launch, {self.reshape({-1}), shape, result.view({-1})});
  }
  if (!result.is_same(out)) out.copy_(result);
  return out;
}

at::Tensor nonzero_static(const at::Tensor& self, int64_t size, int64_t fill_value) {
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return nonzero_static_out(self, size, fill_value, out);
}

}  // namespace kiln::torch_integration::compiled
