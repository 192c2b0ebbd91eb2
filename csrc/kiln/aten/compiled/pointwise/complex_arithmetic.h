// Complex pointwise arithmetic (complex64 and complex128).
//
// Kiln IR has no complex dtypes, so a complex tensor is lowered as its
// torch.view_as_real float view: the real and imaginary parts become two
// float operands (the view's select(-1, 0) and select(-1, 1)), and the body
// builds each part of the result from real expressions. The entry points take
// the TensorIterator the real op already built (so broadcasting, type
// promotion, out= resizing and every argument check are ATen's), and write
// the iterator's output.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include <string_view>

namespace kiln::torch_integration::compiled {

// Whether `type` is a complex dtype these kernels cover (not ComplexHalf).
bool is_supported_complex(c10::ScalarType type);

// Runs the binary op `key` ("add", "sub", "mul", "div" (true division), or
// the comparisons "eq" and "ne") on
// `iter`'s two inputs when its common dtype is a supported complex dtype;
// `alpha` scales the second operand of add and sub. Returns false, doing
// nothing, for other keys or dtypes.
bool run_complex_binary(const char* op_name, std::string_view key, at::TensorIteratorBase& iter,
                        const c10::Scalar& alpha = c10::Scalar(1));

// Runs the unary op `key` ("neg", "sgn", "reciprocal" or "square", z * z
// for pow(z, 2)) on `iter`'s input
// into its output when the common dtype is a supported complex dtype; false
// otherwise.
bool run_complex_unary(const char* op_name, std::string_view key, at::TensorIteratorBase& iter);

// abs of a complex tensor: a real result (|z| without overflow, as hypot).
// `out` undefined for the functional form; a complex `out` receives |z| + 0i.
at::Tensor complex_abs(const char* op_name, const at::Tensor& self, const at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
