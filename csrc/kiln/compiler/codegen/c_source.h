// C code generation: Kiln IR to one C translation unit per kernel.
//
// The source holds the prelude (prelude.h) and one exported entry function
// with the signature of kernel_abi.h. Loops are written so the C compiler
// vectorises them: pointwise inner loops are specialised on each operand's
// layout class (contiguous operands index with the loop counter, broadcast
// operands are hoisted), and reductions fold into 16 independent lanes
// (row reductions) or into a block of neighbouring outputs (column
// reductions), which needs no reassociation of floating-point sums.
#pragma once

#include <string>

#include "kiln/base/status.h"
#include "kiln/ir/kernel.h"

namespace kiln::codegen {

// The version that keeps stale cached kernels from being reused is
// kiln::kCodegenVersion (kernel_cache.h), part of every disk-cache key.

struct CSource {
  std::string text;
  std::string entry_symbol;
};

// Verifies `kernel` and generates its C source.
StatusOr<CSource> generate_c(const ir::Kernel& kernel);

}  // namespace kiln::codegen
