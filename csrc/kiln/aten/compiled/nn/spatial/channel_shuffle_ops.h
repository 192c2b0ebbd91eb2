// channel_shuffle (channel_shuffle_ops.cc).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor channel_shuffle(const at::Tensor& self, int64_t groups);

}  // namespace kiln::torch_integration::compiled
