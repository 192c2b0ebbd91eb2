#include "kiln/compiler/codegen/c_expressions.h"

#include <sstream>

namespace kiln::codegen {

using ir::DType;
using ir::ReduceOp;
using ir::ValueId;

const char* compute_type(DType dtype) {
  switch (dtype) {
    case DType::kBool: return "_Bool";
    case DType::kUInt8: return "uint8_t";
    case DType::kInt8: return "int8_t";
    case DType::kInt16: return "int16_t";
    case DType::kInt32: return "int32_t";
    case DType::kInt64: return "int64_t";
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32: return "float";
    case DType::kFloat64: return "double";
  }
  return "void";
}

const char* storage_type(DType dtype) {
  switch (dtype) {
    case DType::kBool: return "uint8_t";
    case DType::kFloat16:
    case DType::kBFloat16: return "uint16_t";
    default: return compute_type(dtype);
  }
}

const char* helper_suffix(DType dtype) { return ir::dtype_name(dtype); }

const char* math_suffix(DType dtype) { return dtype == DType::kFloat64 ? "" : "f"; }

// The unsigned type with the width of an integer dtype, for wrapping arithmetic.
const char* unsigned_type(DType dtype) {
  switch (dtype) {
    case DType::kInt32: return "uint32_t";
    case DType::kInt64: return "uint64_t";
    default: return nullptr;  // narrower types promote to int and are truncated on assignment
  }
}

std::string value(ValueId id) { return "v" + std::to_string(id); }

std::string real_literal(double number, DType dtype) {
  if (number != number) return dtype == DType::kFloat64 ? "__builtin_nan(\"\")" : "__builtin_nanf(\"\")";
  if (number == __builtin_inf()) return dtype == DType::kFloat64 ? "__builtin_inf()" : "__builtin_inff()";
  if (number == -__builtin_inf()) return dtype == DType::kFloat64 ? "(-__builtin_inf())" : "(-__builtin_inff())";
  std::ostringstream text;
  text.precision(17);
  text << "((" << compute_type(dtype) << ")" << number << ")";
  return text.str();
}

// Converts C expression `text` of compute dtype `from` into compute dtype `to`.
namespace {

// `text` (of floating dtype `from`) truncated to a `bits`-bit integer, the
// minimum for NaN and values out of range.
std::string float_to_integer(const std::string& text, DType from, int bits) {
  const std::string suffix = from == DType::kFloat64 ? "" : "f";
  const std::string type = bits == 32 ? "int32_t" : "int64_t";
  const std::string limit = bits == 32 ? "0x1p31" : "0x1p63";
  return "((" + text + ") >= -" + limit + suffix + " && (" + text + ") < " + limit + suffix + " ? (" + type + ")(" +
         text + ") : " + (bits == 32 ? "INT32_MIN" : "INT64_MIN") + ")";
}

}  // namespace

std::string convert(const std::string& text, DType from, DType to) {
  if (from == to) return text;
  if (to == DType::kBool) return "((" + text + ") != 0)";
  // C leaves a floating value outside the target's range undefined, and GCC
  // uses that: (float)(uint8_t)x may skip the wrap once both conversions meet
  // in one function (a fused kernel), though a store and a load apart they
  // wrap. Narrow integers therefore go through a wider one, defined for every
  // value a 32-bit conversion takes: uint8 through int64 as ATen's
  // c10::convert does, int8 and int16 through int32 as ATen's casts compile.
  //
  // A floating value outside int32's or int64's range (NaN included) is
  // undefined too, and GCC used that as well: a fused bfloat16 NaN became 0
  // where a store and a load apart gave INT64_MIN. So those conversions say
  // what x86's truncating conversions do: the type's minimum, as the CPU's
  // ATen kernels give.
  if (ir::is_floating(from) && to == DType::kUInt8) return "((uint8_t)" + float_to_integer(text, from, 64) + ")";
  if (ir::is_floating(from) && (to == DType::kInt8 || to == DType::kInt16)) {
    return "((" + std::string(compute_type(to)) + ")" + float_to_integer(text, from, 32) + ")";
  }
  if (ir::is_floating(from) && (to == DType::kInt32 || to == DType::kInt64)) {
    return float_to_integer(text, from, to == DType::kInt32 ? 32 : 64);
  }
  // See KILN_OPAQUE_INT in the prelude: (float)(int)x must not become truncf(x).
  if (!ir::is_floating(from) && from != DType::kBool && ir::is_floating(to)) {
    return "((" + std::string(compute_type(to)) + ")KILN_OPAQUE_INT(" + text + "))";
  }
  return "((" + std::string(compute_type(to)) + ")(" + text + "))";
}

// Identity of each reduction, in the accumulator's compute type.
std::string reduce_identity(ReduceOp op, DType dtype) {
  bool floating = ir::is_floating(dtype);
  switch (op) {
    case ReduceOp::kSum: return "0";
    case ReduceOp::kProduct: return "1";
    case ReduceOp::kAny: return "0";
    case ReduceOp::kAll: return "1";
    case ReduceOp::kMax:
    case ReduceOp::kArgMax:
      if (floating) return dtype == DType::kFloat64 ? "(-__builtin_inf())" : "(-__builtin_inff())";
      switch (dtype) {
        case DType::kBool:
        case DType::kUInt8: return "0";
        case DType::kInt8: return "INT8_MIN";
        case DType::kInt16: return "INT16_MIN";
        case DType::kInt32: return "INT32_MIN";
        default: return "INT64_MIN";
      }
    case ReduceOp::kMin:
    case ReduceOp::kArgMin:
      if (floating) return dtype == DType::kFloat64 ? "__builtin_inf()" : "__builtin_inff()";
      switch (dtype) {
        case DType::kBool: return "1";
        case DType::kUInt8: return "UINT8_MAX";
        case DType::kInt8: return "INT8_MAX";
        case DType::kInt16: return "INT16_MAX";
        case DType::kInt32: return "INT32_MAX";
        default: return "INT64_MAX";
      }
  }
  return "0";
}

std::string reduce_step(ReduceOp op, DType dtype, const std::string& accumulator,
                        const std::string& element) {
  bool floating = ir::is_floating(dtype);
  const char* wide = unsigned_type(dtype);
  switch (op) {
    case ReduceOp::kSum:
      if (wide) return accumulator + " = (" + compute_type(dtype) + ")((" + wide + ")" + accumulator + " + (" + wide + ")" + element + ");";
      return accumulator + " = " + accumulator + " + " + element + ";";
    case ReduceOp::kProduct:
      if (wide) return accumulator + " = (" + compute_type(dtype) + ")((" + wide + ")" + accumulator + " * (" + wide + ")" + element + ");";
      return accumulator + " = " + accumulator + " * " + element + ";";
    case ReduceOp::kMax:
      if (floating) return accumulator + " = (" + element + " != " + element + " || " + element + " > " + accumulator + ") ? " + element + " : " + accumulator + ";";
      return accumulator + " = " + element + " > " + accumulator + " ? " + element + " : " + accumulator + ";";
    case ReduceOp::kMin:
      if (floating) return accumulator + " = (" + element + " != " + element + " || " + element + " < " + accumulator + ") ? " + element + " : " + accumulator + ";";
      return accumulator + " = " + element + " < " + accumulator + " ? " + element + " : " + accumulator + ";";
    case ReduceOp::kAny: return accumulator + " = " + accumulator + " | " + element + ";";
    case ReduceOp::kAll: return accumulator + " = " + accumulator + " & " + element + ";";
    default: return "";
  }
}

// Whether `element` (at position `position`) should replace the best value so
// far of an argmax/argmin: strictly better, or the first NaN.
std::string arg_better(ReduceOp op, DType dtype, const std::string& element,
                       const std::string& best, const std::string& best_index) {
  std::string compare = element + (op == ReduceOp::kArgMax ? " > " : " < ") + best;
  std::string text = best_index + " < 0 || " + compare;
  if (ir::is_floating(dtype)) {
    text += " || (" + element + " != " + element + " && " + best + " == " + best + ")";
  }
  return text;
}

std::optional<VectorFold> vector_fold_of(ReduceOp op, DType accumulator) {
  // The prelude's folds: kiln_v<op>_<type> combines two vectors lane by lane,
  // kiln_h<op>_<type> one vector's lanes.
  struct Names {
    ReduceOp op;
    const char* f32[2];
    const char* f64[2];
  };
  static constexpr Names kFolds[] = {
      {ReduceOp::kSum, {"kiln_vadd_f32x8", "kiln_hadd_f32x8"}, {"kiln_vadd_f64x4", "kiln_hadd_f64x4"}},
      {ReduceOp::kProduct, {"kiln_vmul_f32x8", "kiln_hmul_f32x8"}, {"kiln_vmul_f64x4", "kiln_hmul_f64x4"}},
      {ReduceOp::kMax, {"kiln_vmax_f32x8", "kiln_hmax_f32x8"}, {"kiln_vmax_f64x4", "kiln_hmax_f64x4"}},
      {ReduceOp::kMin, {"kiln_vmin_f32x8", "kiln_hmin_f32x8"}, {"kiln_vmin_f64x4", "kiln_hmin_f64x4"}},
  };
  for (const Names& fold : kFolds) {
    if (fold.op != op) continue;
    if (accumulator == DType::kFloat32) return VectorFold{"kiln_f32x8", 8, fold.f32[0], fold.f32[1]};
    if (accumulator == DType::kFloat64) return VectorFold{"kiln_f64x4", 4, fold.f64[0], fold.f64[1]};
  }
  return std::nullopt;
}

}  // namespace kiln::codegen
