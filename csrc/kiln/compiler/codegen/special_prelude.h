// C helpers for the special-function opcodes (ir/ops.h: digamma, erfinv,
// Bessel functions, orthogonal polynomials, ...), in three parts a kernel's
// source includes only when one of its nodes needs them, so ordinary kernels
// do not pay their compile time.
//
// Most helpers compute in double for float32 and float64 kernels alike (their
// series and asymptotic expansions are tuned for double); the polynomial
// recurrences run in the kernel's own type, as the CPU's do, so overflow and
// rounding match it.
#pragma once

#include "kiln/ir/ops.h"

namespace kiln::codegen {

enum class SpecialPart { kGamma, kBessel, kPolynomial };

// How the C expression of a special-function node is formed.
struct SpecialFunctionCall {
  const char* function;  // kiln_<name> (double) or kiln_<name>_f32 / _f64 (typed)
  SpecialPart part;      // which prelude part defines it
  bool typed;            // a per-type helper instead of one in double
  bool precision_flag;   // takes a trailing `single` argument (1 for float32)
};

// The call for special-function opcode `code` (opcode_is_special_function).
SpecialFunctionCall special_function_call(ir::OpCode code);

// The C text of each part.
const char* c_special_prelude(SpecialPart part);
const char* c_special_prelude_gamma();
const char* c_special_prelude_bessel();
const char* c_special_prelude_polynomial();

}  // namespace kiln::codegen
