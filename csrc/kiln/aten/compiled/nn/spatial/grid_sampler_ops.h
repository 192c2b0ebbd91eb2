// grid_sampler_2d (F.grid_sample on 4-D input) on kiln (registered in
// aten/compiled/nn/spatial/registration.cc).
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <tuple>

namespace kiln::torch_integration::compiled {

at::Tensor grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation_mode,
                           int64_t padding_mode, bool align_corners);

std::tuple<at::Tensor, at::Tensor> grid_sampler_2d_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& grid,
    int64_t interpolation_mode, int64_t padding_mode, bool align_corners, std::array<bool, 2> output_mask);

// The CPU's argument errors for grid_sampler_2d and its backward.
void check_grid_sampler_2d_arguments(const at::Tensor& input, const at::Tensor& grid, int64_t mode,
                                     int64_t padding);

}  // namespace kiln::torch_integration::compiled
