// native_dropout has no Generator argument: it draws from the kiln device's
// default generator, so torch.manual_seed controls it. The kernel is
// compiled (compiled/factory/random_ops.cc: one Philox kernel writes the output and
// the mask); this entry stays in the native table's registration.
#include "kiln/aten/compiled/factory/random_ops.h"
#include "kiln/aten/native/native_kernels.h"

namespace kiln::torch_integration::native {

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train) {
  return compiled::native_dropout(input, p, train);
}

}  // namespace kiln::torch_integration::native
