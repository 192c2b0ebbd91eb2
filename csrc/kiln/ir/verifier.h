// Verifier: checks that a Kernel is well formed before code is generated for it.
//
// Returns kInvalidArgument naming the kernel and the first broken rule: operand
// and scalar counts within the launch limits, nodes in SSA order with the right
// arity, dtypes following the rules in ops.h, every output stored, reductions
// with a per-element value that reads no accumulator and an epilogue that reads
// no tensor element.
#pragma once

#include "kiln/base/status.h"
#include "kiln/ir/kernel.h"

namespace kiln::ir {

Status verify(const Kernel& kernel);

}  // namespace kiln::ir
