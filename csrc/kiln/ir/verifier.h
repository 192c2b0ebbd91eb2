// Verifier: checks that a Kernel is well formed before code is generated for it.
//
// Part of the IR layer (below the torch line); the code generator
// (codegen::generate_c) calls it first on every kernel, so no C is generated
// for a malformed one.
//
// Returns kInvalidArgument naming the kernel and the first broken rule: operand
// and scalar counts within the launch limits, nodes in SSA order with the right
// arity, dtypes following the rules in ops.h, every output stored, reductions
// with a per-element value that reads no accumulator and an epilogue that reads
// no tensor element, row kernels whose stages read only earlier stages, a
// fixed shape that agrees with the operands' layout classes, and indexed
// stores only in single-threaded pointwise kernels.
//
// Synchronous and pure: `kernel` is only read during the call; safe from any
// thread. Never throws: every problem is the returned Status (ok when well
// formed), so a kernel of any content may be passed. Cost: linear in nodes;
// the reachability walk of reductions recurses once per node of a dependency
// chain.
#pragma once

#include "kiln/base/status.h"
#include "kiln/ir/kernel.h"

namespace kiln::ir {

Status verify(const Kernel& kernel);

}  // namespace kiln::ir
