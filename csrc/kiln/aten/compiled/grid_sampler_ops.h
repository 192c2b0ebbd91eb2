// grid_sampler_2d (F.grid_sample on 4-D input) on kiln (registered in
// aten/registration_bag_grid.cc).
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

at::Tensor grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation_mode,
                           int64_t padding_mode, bool align_corners);

}  // namespace kiln::torch_integration::compiled
