// complex and polar: the CPU's dtype checks (in its words), the broadcast
// shape, then the two parts written through view_as_real(out) by kiln's own
// kernels (cos, sin, mul, copy).
#include "kiln/aten/compiled/pointwise/complex_ops.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/view_as_real.h>

#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

bool is_supported_part(c10::ScalarType type) {
  return type == c10::kFloat || type == c10::kDouble || type == c10::kHalf;
}

void check_dtypes(const at::Tensor& out, const at::Tensor& first, const at::Tensor& second) {
  TORCH_CHECK(is_supported_part(first.scalar_type()) && is_supported_part(second.scalar_type()),
              "Expected both inputs to be Half, Float or Double tensors but got ",
              first.scalar_type(), " and ", second.scalar_type());
  TORCH_CHECK(first.scalar_type() == second.scalar_type(), "Expected object of scalar type ",
              first.scalar_type(), " but got scalar type ", second.scalar_type(),
              " for second argument");
  c10::ScalarType complex = c10::toComplexType(first.scalar_type());
  TORCH_CHECK(out.scalar_type() == complex, "Expected object of scalar type ", complex,
              " but got scalar type ", out.scalar_type(), " for argument 'out'");
}

// Writes real + i * imaginary (both broadcast to out's shape) into out.
void write_parts(at::Tensor& out, const at::Tensor& real, const at::Tensor& imaginary) {
  at::Tensor parts = at::view_as_real(out);
  parts.select(-1, 0).copy_(real);
  parts.select(-1, 1).copy_(imaginary);
}

void resize(at::Tensor& out, const at::Tensor& first, const at::Tensor& second) {
  at::DimVector sizes = at::infer_size_dimvector(first.sizes(), second.sizes());
  resize_out_output(out, sizes, {}, out.options());
}

}  // namespace

at::Tensor& complex_out(const at::Tensor& real, const at::Tensor& imag, at::Tensor& out) {
  check_dtypes(out, real, imag);
  resize(out, real, imag);
  write_parts(out, real, imag);
  return out;
}

at::Tensor& polar_out(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out) {
  check_dtypes(out, abs, angle);
  resize(out, abs, angle);
  // abs * cos(angle), abs * sin(angle); the CPU computes float16 parts in
  // float and rounds once, on the store into out.
  bool half = abs.scalar_type() == c10::kHalf;
  at::Tensor magnitude = half ? abs.to(c10::kFloat) : abs;
  at::Tensor direction = half ? angle.to(c10::kFloat) : angle;
  write_parts(out, at::mul(magnitude, at::cos(direction)), at::mul(magnitude, at::sin(direction)));
  return out;
}

}  // namespace kiln::torch_integration::compiled
