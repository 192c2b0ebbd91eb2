// native_dropout has no Generator argument, so through the CPU fallback it
// would draw from the CPU's default generator and ignore torch.kiln.manual_seed.
// Kiln decomposes it the way ATen's CPU kernel does, into bernoulli_ (whose
// generator the fallback seeds from the kiln generator) and multiplications.
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>

#include "kiln/aten/native/native_kernels.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::native {

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train) {
  record_static_op("aten::native_dropout", OpPath::kNative);
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (input.numel() == 0) {
    return {input.clone(), at::empty_like(input, input.options().dtype(c10::kBool))};
  }
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, input.options().dtype(c10::kBool))};
  }
  double keep = 1.0 - p;
  double scale = keep == 0.0 ? 0.0 : 1.0 / keep;
  at::Tensor mask = at::empty_like(input, c10::MemoryFormat::Contiguous);
  mask.bernoulli_(keep);
  at::Tensor output = input.mul(mask).mul_(scale);
  return {output, mask.to(c10::kBool)};
}

}  // namespace kiln::torch_integration::native
