// Launching the kernels the fusion pass made: a fused kernel's expression is
// replayed into an IR Builder inside the compiled path's own launchers
// (launch_elementwise, launch_reduction, launch_row_reduction), so fused kernels get the eager
// path's dim ordering and merging, kernel cache, threading and stream order.
//
// `op_key` names the fused expression in kernel signatures (a digest of its
// text): two kernels with one key must have one expression.
#pragma once

#include <ATen/core/Tensor.h>

#include <string_view>

#include "kiln/compiler/passes/fusion.h"

namespace kiln::torch_integration::program {

// The op names fused kernels launch and are counted under (op tracking).
inline constexpr char kFusedPointwiseName[] = "kiln::fused_pointwise";
inline constexpr char kFusedReductionName[] = "kiln::fused_reduction";
inline constexpr char kFusedRowName[] = "kiln::fused_row";

// `inputs` are expanded to kernel.iteration_sizes; `outputs` have those sizes.
void launch_fused_pointwise(const compiler::FusedKernel& kernel, std::string_view op_key,
                            c10::ArrayRef<at::Tensor> inputs, c10::ArrayRef<at::Tensor> outputs);

// `inputs` are expanded to kernel.iteration_sizes; `outputs` have the
// reduction's output sizes (with or without the reduced dims).
void launch_fused_reduction(const compiler::FusedKernel& kernel, std::string_view op_key,
                            c10::ArrayRef<at::Tensor> inputs, c10::ArrayRef<at::Tensor> outputs);

// `inputs` are expanded to kernel.iteration_sizes; each output has those
// sizes (stored at every element) or a row value's (with or without the
// reduced dims, stored once per row).
void launch_fused_row(const compiler::FusedKernel& kernel, std::string_view op_key, c10::ArrayRef<at::Tensor> inputs,
                      c10::ArrayRef<at::Tensor> outputs);

}  // namespace kiln::torch_integration::program
