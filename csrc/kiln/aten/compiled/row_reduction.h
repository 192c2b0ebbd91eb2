// Row kernels on the compiled path: one kernel that folds each row (the
// reduced dims) in several stages and stores values per row and per element,
// as fused softmax and layer norm kernels do (ir/kernel.h, KernelKind::kRow).
//
// The caller gives the inputs and the per-element outputs at one shape (the
// inputs expanded to it), the per-row outputs expanded to it too (stride 0
// along the row), and the reduced dims. The kept dims come first, each group
// fastest-first; the row's fastest dim is vectorised.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string_view>
#include <vector>

#include "kiln/ir/builder.h"

namespace kiln::torch_integration::compiled {

// Builds the kernel's values into `builder` (a kRow builder with the inputs
// and outputs added) from `loads`, one per input, adding the stages with
// Builder::reduce_stage; returns one value per output.
using RowKernelBody = std::function<std::vector<ir::ValueId>(ir::Builder& builder,
                                                              const std::vector<ir::ValueId>& loads)>;

// `op_key` names the body's semantics in the kernel signature; `op_name`
// (static) labels errors and op tracking. The kernel is specialised to the
// launch's sizes and strides (ir::FixedShape): for compiled programs.
void launch_row_reduction(const char* op_name, std::string_view op_key, c10::ArrayRef<at::Tensor> inputs,
                          c10::ArrayRef<at::Tensor> outputs, c10::IntArrayRef reduced, const RowKernelBody& body);

}  // namespace kiln::torch_integration::compiled
