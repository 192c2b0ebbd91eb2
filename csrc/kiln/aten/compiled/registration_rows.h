// The row shapes the compiled families' registration tables repeat: one macro
// per set of overloads an op registers, each overload bound to the kernel named
// after it in kiln::torch_integration::compiled (name, name_, name_out).
// Included only by registration.cc files, inside namespace
// kiln::torch_integration.
#pragma once

#include <torch/library.h>

// functional, in-place and out=: "abs", "abs_", "abs.out".
#define KILN_IMPL_UNARY(m, name)                  \
  m.impl(#name, TORCH_FN(compiled::name));        \
  m.impl(#name "_", TORCH_FN(compiled::name##_)); \
  m.impl(#name ".out", TORCH_FN(compiled::name##_out));

// functional and out= only: "special_i1", "special_i1.out".
#define KILN_IMPL_FUNCTIONAL_OUT(m, name)  \
  m.impl(#name, TORCH_FN(compiled::name)); \
  m.impl(#name ".out", TORCH_FN(compiled::name##_out));

// functional and an out= overload with its own name:
// ("hardtanh_backward", "hardtanh_backward.grad_input").
#define KILN_IMPL_BACKWARD(m, name, out)   \
  m.impl(#name, TORCH_FN(compiled::name)); \
  m.impl(out, TORCH_FN(compiled::name##_out));

// functional, in-place and out= overloads whose schema names differ from the
// kernel's: ("add.Tensor", "add_.Tensor", "add.out") for compiled::add.
#define KILN_IMPL_BINARY(m, name, functional, inplace, out) \
  m.impl(functional, TORCH_FN(compiled::name));             \
  m.impl(inplace, TORCH_FN(compiled::name##_));             \
  m.impl(out, TORCH_FN(compiled::name##_out));
