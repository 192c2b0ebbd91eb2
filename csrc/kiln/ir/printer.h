// Printer: Kiln IR as text, one line per declaration and node.
//
// Part of the IR layer (below the torch line); the code generator embeds the
// text in each kernel's C source, and the kernel cache saves it with
// KILN_DUMP_DIR and in compile errors.
//
//   kernel add pointwise rank=1
//     input 0: f32 c
//     input 1: f32 b
//     output 0: f32 c
//     %0 = load 0 : f32
//     %1 = load 1 : f32
//     %2 = add %0, %1 : f32
//     store 0 %2
//
// The text is deterministic (it does not depend on addresses or on the order
// kernels were built in), so it is also what the stable hash digests, and what
// KILN_DUMP_DIR writes next to each kernel's C source.
//
// Pure functions of the kernel, which is only read during the call; safe from
// any thread; no errors reported. The kernel must have one result, store
// offset and store flag per output (as Builder makes it and verify() checks):
// those vectors are indexed without a check.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/ir/kernel.h"

namespace kiln::ir {

std::string print(const Kernel& kernel);

// A stable 64-bit hash of the kernel's semantics (its printed form, without
// the readable name): the same on every run, machine and build (base/hash.h).
uint64_t stable_hash(const Kernel& kernel);

}  // namespace kiln::ir
