// Compiled repeat_interleave.Tensor: for repeats r, the indices i repeated
// r[i] times, as one sequential row kernel. The input checks (no negative
// repeat) and, without output_size, the output size read the repeats back to
// the host: those calls synchronize the stream, as CUDA's do.
// repeat_interleave.self_Tensor/self_int are CompositeImplicitAutograd in
// ATen (an index_select by these indices). Registered in
// aten/compiled/sort/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace kiln::torch_integration::compiled {

at::Tensor repeat_interleave(const at::Tensor& repeats, std::optional<c10::SymInt> output_size);

}  // namespace kiln::torch_integration::compiled
