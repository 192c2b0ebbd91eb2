#include "kiln/aten/compiled/vector_reduction_ops.h"

#include <ATen/ops/all.h>
#include <ATen/ops/eq.h>

namespace kiln::torch_integration::compiled {

bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  if (!self.is_same_size(other)) return false;
  // eq promotes the operands to their common dtype, as the CPU's equal does;
  // NaN is unequal to itself.
  return at::all(at::eq(self, other)).item<bool>();
}

}  // namespace kiln::torch_integration::compiled
