// Complex pointwise arithmetic through view_as_real (see complex_arithmetic.h).
//
// Every operand becomes a (real, imaginary) pair of IR values in the
// component dtype of the iterator's common dtype (float for complex64, double
// for complex128), the precision the CPU computes in:
// - a complex tensor: two float inputs, the parts of its view_as_real view;
// - a real tensor: one input, with imaginary part 0 (the CPU promotes it to
//   x + 0i, so 0 * inf gives NaN the same way);
// - a CPU 0-dim tensor (a wrapped Python number): launch scalars, one per
//   part for a complex number.
// The result's parts go to the view_as_real view of the output. When the
// output's dtype differs from the common dtype (an out= tensor of the other
// complex width), the kernel writes a temporary that is copied into it, as
// the CPU computes in the common dtype and casts.
#include "kiln/aten/compiled/pointwise/complex_arithmetic.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/native/Resize.h>

#include <string>
#include <vector>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/device_checks.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;
using ir::ValueId;

struct Complex {
  ValueId real;
  ValueId imaginary;
};

// How one operand reaches the kernel; the letter goes into the kernel key,
// since each kind gives the body a different set of inputs and scalars.
enum class Kind : char { kComplexTensor = 'c', kRealTensor = 'r', kComplexNumber = 'z',
                         kRealNumber = 's' };

// Collects the kernel's inputs and scalars while classifying operands.
struct Operands {
  explicit Operands(c10::IntArrayRef result_sizes) : sizes(result_sizes) {}

  c10::IntArrayRef sizes;
  std::vector<at::Tensor> inputs;
  std::vector<c10::Scalar> scalars;
  std::vector<Kind> kinds;
  std::string key;

  void add(const at::Tensor& tensor) {
    if (tensor.is_cpu() && tensor.dim() == 0) {
      c10::Scalar value = tensor.item();
      if (value.isComplex()) {
        c10::complex<double> number = value.toComplexDouble();
        scalars.emplace_back(number.real());
        scalars.emplace_back(number.imag());
        push(Kind::kComplexNumber);
      } else {
        scalars.emplace_back(value.toDouble());
        push(Kind::kRealNumber);
      }
      return;
    }
    if (tensor.is_complex()) {
      // view_as_real refuses lazily conjugated or negated views: resolve
      // them into values first.
      at::Tensor parts = at::view_as_real(tensor.resolve_conj().resolve_neg().expand(sizes));
      inputs.push_back(parts.select(-1, 0));
      inputs.push_back(parts.select(-1, 1));
      push(Kind::kComplexTensor);
    } else {
      inputs.push_back(tensor.expand(sizes));
      push(Kind::kRealTensor);
    }
  }

  void add_alpha(const c10::Scalar& alpha) {
    c10::complex<double> number = alpha.toComplexDouble();
    scalars.emplace_back(number.real());
    scalars.emplace_back(number.imag());
    key += 'a';
  }

  void push(Kind kind) {
    kinds.push_back(kind);
    key += static_cast<char>(kind);
  }
};

// Reads the operands back inside the body, in the order Operands added them.
class Reader {
 public:
  Reader(ElementwiseContext& context, ir::DType part) : context_(context), part_(part) {}

  Complex next(Kind kind) {
    switch (kind) {
      case Kind::kComplexTensor: {
        ValueId real = input();
        return {real, input()};
      }
      case Kind::kRealTensor: return {input(), zero()};
      case Kind::kComplexNumber: {
        ValueId real = scalar();
        return {real, scalar()};
      }
      case Kind::kRealNumber: return {scalar(), zero()};
    }
    TORCH_INTERNAL_ASSERT(false);
  }

  Complex alpha() {
    ValueId real = scalar();
    return {real, scalar()};
  }

  ValueId zero() { return context_.builder.constant(0.0, part_); }

 private:
  ValueId input() { return context_.builder.cast(context_.inputs[next_input_++], part_); }
  ValueId scalar() { return context_.builder.cast(context_.scalars[next_scalar_++], part_); }

  ElementwiseContext& context_;
  ir::DType part_;
  int next_input_ = 0;
  int next_scalar_ = 0;
};

// Real arithmetic on IR values of one dtype.
struct Math {
  ir::Builder& builder;
  ir::DType part;

  ValueId add(ValueId a, ValueId b) { return builder.binary(OpCode::kAdd, a, b); }
  ValueId sub(ValueId a, ValueId b) { return builder.binary(OpCode::kSubtract, a, b); }
  ValueId mul(ValueId a, ValueId b) { return builder.binary(OpCode::kMultiply, a, b); }
  ValueId div(ValueId a, ValueId b) { return builder.binary(OpCode::kDivide, a, b); }
  ValueId abs(ValueId a) { return builder.unary(OpCode::kAbs, a); }
  ValueId neg(ValueId a) { return builder.unary(OpCode::kNegate, a); }
  ValueId constant(double value) { return builder.constant(value, part); }
  ValueId select(ValueId condition, ValueId a, ValueId b) { return builder.select(condition, a, b); }

  Complex multiply(Complex x, Complex y) {
    return {sub(mul(x.real, y.real), mul(x.imaginary, y.imaginary)),
            add(mul(x.real, y.imaginary), mul(x.imaginary, y.real))};
  }

  // x / y by Smith's method: dividing through by the larger of |c| and |d|
  // keeps c*c + d*d from overflowing or underflowing, the way c10::complex
  // divides. A zero divisor divides each part by zero (inf or NaN), as there.
  Complex divide(Complex x, Complex y) {
    ValueId a = x.real, b = x.imaginary, c = y.real, d = y.imaginary;
    ValueId abs_c = abs(c), abs_d = abs(d);
    ValueId wide = builder.binary(OpCode::kGreaterEqual, abs_c, abs_d);
    ValueId ratio = select(wide, div(d, c), div(c, d));
    ValueId denominator = select(wide, add(c, mul(d, ratio)), add(d, mul(c, ratio)));
    ValueId real = select(wide, add(a, mul(b, ratio)), add(mul(a, ratio), b));
    ValueId imaginary = select(wide, sub(b, mul(a, ratio)), sub(mul(b, ratio), a));
    Complex quotient{div(real, denominator), div(imaginary, denominator)};
    ValueId zero = constant(0.0);
    ValueId zero_divisor = builder.binary(OpCode::kLogicalAnd, builder.binary(OpCode::kEqual, c, zero),
                                          builder.binary(OpCode::kEqual, d, zero));
    return {select(zero_divisor, div(a, abs_c), quotient.real),
            select(zero_divisor, div(b, abs_d), quotient.imaginary)};
  }

  ValueId magnitude(Complex x) { return builder.binary(OpCode::kHypot, x.real, x.imaginary); }
};

ir::DType part_dtype(c10::ScalarType complex_type) {
  return require_ir_dtype(c10::toRealValueType(complex_type), "complex");
}

// Launches `body` over `operands` into `output` (complex, or real for a
// real-valued result), through a temporary of `result_type` when the
// output's dtype differs or it is a lazily conjugated view.
template <typename Body>
void launch(const char* op_name, const std::string& key, const Operands& operands,
            c10::ArrayRef<c10::Scalar> scalars, const at::Tensor& output,
            c10::ScalarType result_type, Body body) {
  bool direct = output.scalar_type() == result_type && !output.is_conj() && !output.is_neg();
  at::Tensor target = direct ? output : at::empty(output.sizes(), output.options().dtype(result_type));
  std::vector<at::Tensor> outputs;
  if (c10::isComplexType(result_type)) {
    at::Tensor parts = at::view_as_real(target);
    outputs = {parts.select(-1, 0), parts.select(-1, 1)};
  } else {
    outputs = {target};
  }
  launch_elementwise(op_name, key, operands.inputs, outputs, scalars, body);
  if (!direct) output.copy_(target);
}

}  // namespace

bool is_supported_complex(c10::ScalarType type) {
  return type == c10::ScalarType::ComplexFloat || type == c10::ScalarType::ComplexDouble;
}

bool run_complex_binary(const char* op_name, std::string_view key, at::TensorIteratorBase& iter,
                        const c10::Scalar& alpha) {
  c10::ScalarType common = iter.common_dtype();
  if (!is_supported_complex(common)) return false;
  bool additive = key == "add" || key == "sub";
  bool comparison = key == "eq" || key == "ne";
  if (!additive && !comparison && key != "mul" && key != "div") return false;
  at::Tensor output = iter.output(0);
  Operands operands{output.sizes()};
  operands.key = "complex_" + std::string(key) + "_";
  operands.add(iter.input(0));
  operands.add(iter.input(1));
  bool scaled = additive && !(alpha.isComplex() ? alpha.toComplexDouble() == c10::complex<double>(1)
                                                : alpha.toDouble() == 1.0);
  if (scaled) operands.add_alpha(alpha);
  ir::DType part = part_dtype(common);
  // eq and ne give bool (cast into an out= tensor of another dtype).
  c10::ScalarType result_type = comparison ? c10::ScalarType::Bool : common;
  launch(op_name, operands.key, operands, operands.scalars, output, result_type,
         [&](ElementwiseContext& context) -> std::vector<ValueId> {
    Reader reader(context, part);
    Math math{context.builder, part};
    Complex x = reader.next(operands.kinds[0]);
    Complex y = reader.next(operands.kinds[1]);
    if (comparison) {
      ir::Builder& builder = context.builder;
      ValueId equal = builder.binary(OpCode::kLogicalAnd, builder.binary(OpCode::kEqual, x.real, y.real),
                                     builder.binary(OpCode::kEqual, x.imaginary, y.imaginary));
      return {key == "eq" ? equal : builder.unary(OpCode::kLogicalNot, equal)};
    }
    Complex result;
    if (additive) {
      if (scaled) y = math.multiply(reader.alpha(), y);
      OpCode op = key == "add" ? OpCode::kAdd : OpCode::kSubtract;
      result = {context.builder.binary(op, x.real, y.real),
                context.builder.binary(op, x.imaginary, y.imaginary)};
    } else if (key == "mul") {
      result = math.multiply(x, y);
    } else {
      result = math.divide(x, y);
    }
    return {result.real, result.imaginary};
  });
  return true;
}

bool run_complex_unary(const char* op_name, std::string_view key, at::TensorIteratorBase& iter) {
  c10::ScalarType common = iter.common_dtype();
  if (!is_supported_complex(common)) return false;
  if (key != "neg" && key != "sgn" && key != "reciprocal" && key != "square") return false;
  at::Tensor output = iter.output(0);
  Operands operands{output.sizes()};
  operands.key = "complex_" + std::string(key) + "_";
  operands.add(iter.input(0));
  ir::DType part = part_dtype(common);
  launch(op_name, operands.key, operands, operands.scalars, output, common,
         [&](ElementwiseContext& context) -> std::vector<ValueId> {
    Reader reader(context, part);
    Math math{context.builder, part};
    Complex z = reader.next(operands.kinds[0]);
    if (key == "neg") return {math.neg(z.real), math.neg(z.imaginary)};
    if (key == "square") {
      Complex result = math.multiply(z, z);
      return {result.real, result.imaginary};
    }
    if (key == "reciprocal") {
      Complex one{math.constant(1.0), math.constant(0.0)};
      Complex result = math.divide(one, z);
      return {result.real, result.imaginary};
    }
    // sgn: z / |z|, and 0 where z is 0.
    ValueId magnitude = math.magnitude(z);
    ValueId zero = math.constant(0.0);
    ValueId is_zero = context.builder.binary(OpCode::kEqual, magnitude, zero);
    return {math.select(is_zero, zero, math.div(z.real, magnitude)),
            math.select(is_zero, zero, math.div(z.imaginary, magnitude))};
  });
  return true;
}

at::Tensor complex_abs(const char* op_name, const at::Tensor& self, const at::Tensor& out) {
  TORCH_CHECK(is_supported_complex(self.scalar_type()), "\"abs_kiln\" not implemented for '",
              c10::toString(self.scalar_type()), "'");
  c10::ScalarType real_type = c10::toRealValueType(self.scalar_type());
  at::Tensor output = out;
  if (!output.defined()) {
    output = at::empty(self.sizes(), self.options().dtype(real_type));
  } else {
    check_same_device(self.device(), out);
    TORCH_CHECK(c10::canCast(real_type, out.scalar_type()), "result type ", real_type,
                " can't be cast to the desired output type ", out.scalar_type());
    at::native::resize_output(output, self.sizes());
  }
  Operands operands{self.sizes()};
  operands.key = "complex_abs_";
  operands.add(self);
  ir::DType part = part_dtype(self.scalar_type());
  launch(op_name, operands.key, operands, operands.scalars, output, real_type,
         [&](ElementwiseContext& context) -> std::vector<ValueId> {
    Reader reader(context, part);
    Math math{context.builder, part};
    return {math.magnitude(reader.next(operands.kinds[0]))};
  });
  return output;
}

}  // namespace kiln::torch_integration::compiled
