// Vector math: one implementation of each libm function per element, whether
// the element is computed in a vectorised loop, its tail, or a scalar loop.
//
// Kernels link glibc's libmvec: a vectorised loop calling a libm function
// calls its vector variant (within 4 ulp), and GCC picks the variant by the
// loop's width (SSE, AVX2, AVX-512 implementations differ). Before, a tail or
// a loop the compiler kept scalar called libm's scalar function, and the two
// disagreed in the last bit for some inputs: an element's result depended on
// the loop around it (its position, the thread split, whether the operands
// aliased). Adaptive eager fuses ops into one loop and must reproduce each
// op's bits exactly, and so must any two launches of one op.
//
// So generated code calls kiln_vm_<function> (kiln_vm_tanhf, kiln_vm_pow,
// ...), declared `simd` like libm's functions, whose scalar version and every
// vector variant (x86-64's b, c, d and e) Kiln defines in the kernel's source
// through one reference variant of libmvec: the widest the target has
// (AVX-512, else AVX2, else SSE), lanes padded or split to fit. Every element
// then goes through the same code, lane by lane (libmvec's lanes do not
// interact: a lane with a special input takes libm's scalar path alone).
// Without libmvec (KILN_VECTOR_MATH unset) or off x86-64, kiln_vm_<function>
// is libm's function.
//
// Pure functions of their arguments; no state.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "kiln/ir/kernel.h"

namespace kiln::codegen {

// Whether `name` ("tanh", "pow", ...) is a libm function routed as above.
bool is_vector_math_function(std::string_view name);

// The routed function `node` calls, with its type suffix ("tanhf", "exp"),
// or empty when it calls none. Follows NodeExpressions::expression.
std::string vector_math_call_of(const ir::Node& node);

// C text defining each routed function in `functions` (names with their
// suffix, as vector_math_call_of returns them), after the prelude.
std::string vector_math_definitions(const std::set<std::string>& functions);

}  // namespace kiln::codegen
