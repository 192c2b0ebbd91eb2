// channel_shuffle (registered in aten/compiled/nn/spatial/registration.cc; autograd's
// formula shuffles the gradient back with channel_shuffle itself).
//
// With C channels in `groups` groups
// of n = C / groups, output channel i * groups + j is input channel j * n + i,
// the (groups, n) -> (n, groups) transpose ATen's CPU kernel performs. That is
// a gather along dim 1 through a per-channel table (spatial_gather.h). Every
// dtype the kiln compiles is supported, as on the CPU; complex tensors take
// the CPU's kernel.
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/channel_shuffle_ops.h>
#include <ATen/ops/empty.h>

#include "kiln/aten/compiled/nn/spatial/spatial_gather.h"
#include "kiln/aten/compiled/nn/spatial/channel_shuffle_ops.h"
#include "kiln/aten/cpu_fallback.h"

namespace kiln::torch_integration::compiled {

at::Tensor channel_shuffle(const at::Tensor& self, int64_t groups) {
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.",
              " Value of groups:", groups);
  const int64_t channels = self.size(1);
  TORCH_CHECK(channels % groups == 0, "Number of channels must be divisible by groups. Got ",
              channels, " channels and ", groups, " groups.");
  if (self.is_complex()) {
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::channel_shuffle>::call(self, groups);
  }
  at::Tensor output = at::empty(self.sizes(), self.options().memory_format(self.suggest_memory_format()));
  const int64_t per_group = channels / groups;
  SpatialAxis axis;
  axis.dim = 1;
  for (int64_t i = 0; i < per_group; ++i) {
    for (int64_t j = 0; j < groups; ++j) axis.indices.push_back(j * per_group + i);
  }
  spatial_gather("aten::channel_shuffle", self, output, {axis}, self.scalar_type());
  return output;
}

}  // namespace kiln::torch_integration::compiled
