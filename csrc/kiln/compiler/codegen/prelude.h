// The fixed C text every generated kernel starts with: the launch-argument
// struct (kernel_abi.h in C), conversions for the half types, integer helpers
// with PyTorch's semantics, and Philox for random numbers.
#pragma once

namespace kiln::codegen {

// The prelude's C source. Part of every kernel's source, hence of its cache key.
const char* c_prelude();

}  // namespace kiln::codegen
