#include "kiln/compiler/codegen/c_node_expressions.h"

#include <set>

#include "kiln/compiler/codegen/c_expressions.h"
#include "kiln/compiler/codegen/special_prelude.h"
#include "kiln/compiler/codegen/vector_math.h"

namespace kiln::codegen {

using ir::DType;
using ir::Layout;
using ir::Node;
using ir::OpCode;

std::string pointer_name(int operand) { return "p" + std::to_string(operand); }
std::string stride_name(int operand) { return "s" + std::to_string(operand); }

std::string load_conversion(DType storage, const std::string& text) {
  switch (storage) {
    case DType::kFloat16: return "kiln_load_f16(" + text + ")";
    case DType::kBFloat16: return "kiln_load_bf16(" + text + ")";
    case DType::kBool: return "(" + text + " != 0)";
    default: return text;
  }
}

std::string store_conversion(DType storage, DType from, const std::string& text) {
  switch (storage) {
    case DType::kFloat16: return "kiln_store_f16(" + convert(text, from, DType::kFloat32) + ")";
    case DType::kBFloat16: return "kiln_store_bf16(" + convert(text, from, DType::kFloat32) + ")";
    case DType::kBool: return "(uint8_t)((" + text + ") != 0)";
    default: return convert(text, from, storage);
  }
}

// The element of operand `index` at position `position` of the vectorised dim.
std::string NodeExpressions::element(int index, const std::string& position) const {
  const int inputs = static_cast<int>(kernel_.inputs.size());
  const ir::Layout layout = index < inputs ? kernel_.inputs[index].layout : kernel_.outputs[index - inputs].layout;
  switch (layout) {
    case Layout::kContiguous: return pointer_name(index) + "[" + position + "]";
    case Layout::kBroadcast: return pointer_name(index) + "[0]";
    case Layout::kStrided: return pointer_name(index) + "[(" + position + ") * " + stride_name(index) + "]";
  }
  return "";
}

std::string NodeExpressions::vector_math() const {
  std::set<std::string> functions;
  for (const Node& node : kernel_.nodes) {
    std::string function = vector_math_call_of(node);
    if (!function.empty()) functions.insert(function);
  }
  return vector_math_definitions(functions);
}

std::string NodeExpressions::special_preludes() const {
  bool needed[3] = {false, false, false};
  for (const Node& node : kernel_.nodes) {
    if (ir::opcode_is_special_function(node.op)) needed[static_cast<int>(special_function_call(node.op).part)] = true;
  }
  std::string text;
  for (int part = 0; part < 3; ++part) {
    if (needed[part]) text += c_special_prelude(static_cast<SpecialPart>(part));
  }
  return text;
}

std::string NodeExpressions::expression(const Node& node, const std::string& position,
                                        const std::string& linear) const {
  DType type = node.dtype;
  auto arg = [&](int slot) { return value(node.args[slot]); };
  auto arg_type = [&](int slot) { return kernel_.nodes[node.args[slot]].dtype; };
  std::string m = math_suffix(type);
  auto call = [&](const std::string& name, int arity) {
    const char* prefix = is_vector_math_function(name) ? "kiln_vm_" : "__builtin_";
    std::string text = prefix + name + m + "(" + arg(0);
    if (arity == 2) text += ", " + arg(1);
    return text + ")";
  };
  bool floating = ir::is_floating(type);
  const char* wide = unsigned_type(type);
  auto wrapping = [&](const char* symbol) {
    if (wide) {
      return "(" + std::string(compute_type(type)) + ")((" + wide + ")" + arg(0) + " " + symbol +
             " (" + wide + ")" + arg(1) + ")";
    }
    return "(" + std::string(compute_type(type)) + ")(" + arg(0) + " " + symbol + " " + arg(1) + ")";
  };
  switch (node.op) {
    case OpCode::kLoad: {
      int index = static_cast<int>(node.integer);
      return load_conversion(kernel_.inputs[index].dtype, element(index, position));
    }
    case OpCode::kIndexedLoad: {
      int index = static_cast<int>(node.integer);
      std::string text = element(index, position);
      text.insert(text.size() - 1, " + " + arg(0));
      return load_conversion(kernel_.inputs[index].dtype, text);
    }
    case OpCode::kScalar:
      if (type == DType::kFloat64) return "args->scalars[" + std::to_string(node.integer) + "].real";
      if (type == DType::kBool) return "(args->scalars[" + std::to_string(node.integer) + "].integer != 0)";
      return "args->scalars[" + std::to_string(node.integer) + "].integer";
    case OpCode::kConstant:
      if (ir::is_integer(type)) return "((" + std::string(compute_type(type)) + ")" + std::to_string(node.integer) + "LL)";
      if (type == DType::kBool) return node.real != 0.0 ? "1" : "0";
      return real_literal(node.real, type);
    case OpCode::kCoordinate: return "c" + std::to_string(node.integer);
    case OpCode::kLinearIndex: return linear;
    case OpCode::kRandomBits:
      return "(int64_t)kiln_philox(args->seed, args->offset, (uint64_t)(" + linear + "), " +
             std::to_string(node.integer) + ")";
    case OpCode::kAccumulator:
      return kernel_.kind == ir::KernelKind::kRow ? "accumulator" + std::to_string(node.integer) : "accumulator";
    case OpCode::kAccumulatorIndex: return "best_index";
    case OpCode::kNegate:
      if (wide) return "(" + std::string(compute_type(type)) + ")(0 - (" + wide + ")" + arg(0) + ")";
      return "(" + std::string(compute_type(type)) + ")(-" + arg(0) + ")";
    case OpCode::kAbs:
      if (floating) return call("fabs", 1);
      if (type == DType::kBool || type == DType::kUInt8) return arg(0);
      return "(" + std::string(compute_type(type)) + ")(" + arg(0) + " < 0 ? 0 - " + arg(0) + " : " + arg(0) + ")";
    case OpCode::kSign:
      if (type == DType::kBool) return arg(0);
      return "(" + std::string(compute_type(type)) + ")((0 < " + arg(0) + ") - (" + arg(0) + " < 0))";
    case OpCode::kBitwiseNot:
      if (type == DType::kBool) return "!" + arg(0);
      return "(" + std::string(compute_type(type)) + ")(~" + arg(0) + ")";
    case OpCode::kExp:
      if (type == DType::kFloat32) return "kiln_exp_f32(" + arg(0) + ")";
      return call("exp", 1);
    case OpCode::kExp2: return call("exp2", 1);
    case OpCode::kExpm1: return call("expm1", 1);
    case OpCode::kLog: return call("log", 1);
    case OpCode::kLog2: return call("log2", 1);
    case OpCode::kLog10: return call("log10", 1);
    case OpCode::kLog1p: return call("log1p", 1);
    case OpCode::kSqrt: return call("sqrt", 1);
    case OpCode::kRsqrt: return "(" + real_literal(1.0, type) + " / " + call("sqrt", 1) + ")";
    case OpCode::kReciprocal: return "(" + real_literal(1.0, type) + " / " + arg(0) + ")";
    case OpCode::kSin: return call("sin", 1);
    case OpCode::kCos: return call("cos", 1);
    case OpCode::kTan: return call("tan", 1);
    case OpCode::kAsin: return call("asin", 1);
    case OpCode::kAcos: return call("acos", 1);
    case OpCode::kAtan: return call("atan", 1);
    case OpCode::kSinh: return call("sinh", 1);
    case OpCode::kCosh: return call("cosh", 1);
    case OpCode::kTanh: return call("tanh", 1);
    case OpCode::kAsinh: return call("asinh", 1);
    case OpCode::kAcosh: return call("acosh", 1);
    case OpCode::kAtanh: return call("atanh", 1);
    case OpCode::kErf: return call("erf", 1);
    case OpCode::kErfc: return call("erfc", 1);
    case OpCode::kLgamma: return call("lgamma", 1);
    case OpCode::kFloor: return call("floor", 1);
    case OpCode::kCeil: return call("ceil", 1);
    case OpCode::kRound: return call("nearbyint", 1);
    case OpCode::kTrunc: return call("trunc", 1);
    case OpCode::kFrac: return "(" + arg(0) + " - " + call("trunc", 1) + ")";
    case OpCode::kSigmoid:
      if (type == DType::kFloat64) return "(1.0 / (1.0 + kiln_vm_exp(-(" + arg(0) + "))))";
      return "kiln_sigmoid_" + std::string(helper_suffix(type)) + "(" + arg(0) + ")";
    case OpCode::kDigamma: case OpCode::kErfinv: case OpCode::kErfcx: case OpCode::kNdtri:
    case OpCode::kLogNdtr: case OpCode::kBesselI0: case OpCode::kBesselI0Scaled:
    case OpCode::kBesselI1: case OpCode::kBesselI1Scaled: case OpCode::kBesselK0:
    case OpCode::kBesselK0Scaled: case OpCode::kBesselK1: case OpCode::kBesselK1Scaled:
    case OpCode::kBesselJ0: case OpCode::kBesselJ1: case OpCode::kBesselY0: case OpCode::kBesselY1:
    case OpCode::kSphericalBesselJ0: case OpCode::kAiryAi: case OpCode::kPolygamma:
    case OpCode::kZeta: case OpCode::kIgamma: case OpCode::kIgammac: case OpCode::kChebyshevT:
    case OpCode::kChebyshevU: case OpCode::kChebyshevV: case OpCode::kChebyshevW:
    case OpCode::kShiftedChebyshevT: case OpCode::kShiftedChebyshevU:
    case OpCode::kShiftedChebyshevV: case OpCode::kShiftedChebyshevW: case OpCode::kHermiteH:
    case OpCode::kHermiteHe: case OpCode::kLaguerreL: case OpCode::kLegendreP:
      return special_expression(node);
    case OpCode::kLogicalNot: return "(" + arg(0) + " == 0)";
    case OpCode::kIsNan: return "(" + arg(0) + " != " + arg(0) + ")";
    case OpCode::kIsInf:
      if (!ir::is_floating(arg_type(0))) return "0";
      return "(" + std::string("__builtin_isinf(") + arg(0) + ") != 0)";
    case OpCode::kAdd:
      if (type == DType::kBool) return "(" + arg(0) + " | " + arg(1) + ")";
      return floating ? arg(0) + " + " + arg(1) : wrapping("+");
    case OpCode::kSubtract: return floating ? arg(0) + " - " + arg(1) : wrapping("-");
    case OpCode::kMultiply:
      if (type == DType::kBool) return "(" + arg(0) + " & " + arg(1) + ")";
      return floating ? arg(0) + " * " + arg(1) : wrapping("*");
    case OpCode::kDivide:
      if (floating) return arg(0) + " / " + arg(1);
      return integer_helper("div", type, node);
    case OpCode::kFloorDivide: return integer_helper("floordiv", type, node);
    case OpCode::kRemainder: return integer_helper("remainder", type, node);
    case OpCode::kFmod:
      if (floating) return call("fmod", 2);
      return integer_helper("fmod", type, node);
    case OpCode::kPower:
      if (floating) return call("pow", 2);
      return integer_helper("pow", type, node);
    case OpCode::kAtan2: return call("atan2", 2);
    case OpCode::kCopysign: return call("copysign", 2);
    case OpCode::kHypot: return call("hypot", 2);
    // NaN-propagating, ties to the second: the prelude's helpers say why
    // they are functions.
    case OpCode::kMaximum:
      if (floating) return "kiln_maximum_" + std::string(helper_suffix(type)) + "(" + arg(0) + ", " + arg(1) + ")";
      return "(" + arg(0) + " > " + arg(1) + " ? " + arg(0) + " : " + arg(1) + ")";
    case OpCode::kMinimum:
      if (floating) return "kiln_minimum_" + std::string(helper_suffix(type)) + "(" + arg(0) + ", " + arg(1) + ")";
      return "(" + arg(0) + " < " + arg(1) + " ? " + arg(0) + " : " + arg(1) + ")";
    case OpCode::kBitwiseAnd: return "(" + std::string(compute_type(type)) + ")(" + arg(0) + " & " + arg(1) + ")";
    case OpCode::kBitwiseOr: return "(" + std::string(compute_type(type)) + ")(" + arg(0) + " | " + arg(1) + ")";
    case OpCode::kBitwiseXor: return "(" + std::string(compute_type(type)) + ")(" + arg(0) + " ^ " + arg(1) + ")";
    case OpCode::kShiftLeft: return integer_helper("shl", type, node);
    case OpCode::kShiftRight: return integer_helper("shr", type, node);
    case OpCode::kEqual: return "(" + arg(0) + " == " + arg(1) + ")";
    case OpCode::kNotEqual: return "(" + arg(0) + " != " + arg(1) + ")";
    case OpCode::kLess: return "(" + arg(0) + " < " + arg(1) + ")";
    case OpCode::kLessEqual: return "(" + arg(0) + " <= " + arg(1) + ")";
    case OpCode::kGreater: return "(" + arg(0) + " > " + arg(1) + ")";
    case OpCode::kGreaterEqual: return "(" + arg(0) + " >= " + arg(1) + ")";
    case OpCode::kLogicalAnd: return "((" + arg(0) + " != 0) & (" + arg(1) + " != 0))";
    case OpCode::kLogicalOr: return "((" + arg(0) + " != 0) | (" + arg(1) + " != 0))";
    case OpCode::kLogicalXor: return "((" + arg(0) + " != 0) ^ (" + arg(1) + " != 0))";
    case OpCode::kSelect: return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
    case OpCode::kCast: {
      auto target = static_cast<DType>(node.integer);
      std::string converted = convert(arg(0), arg_type(0), type);
      if (target == DType::kFloat16) return "kiln_round_f16(" + converted + ")";
      if (target == DType::kBFloat16) return "kiln_round_bf16(" + converted + ")";
      return converted;
    }
    case OpCode::kNextAfter: return call("nextafter", 2);
    case OpCode::kFrexpMantissa:
      return "kiln_frexp_mantissa_" + std::string(helper_suffix(type)) + "(" + arg(0) + ")";
    case OpCode::kFrexpExponent:
      return "kiln_frexp_exponent_" + std::string(helper_suffix(type)) + "(" + arg(0) + ")";
  }
  return "0";
}

// A special function's call: on the node's own type for typed helpers,
// else through double, with the `single` flag where the helper takes one.
std::string NodeExpressions::special_expression(const Node& node) const {
  SpecialFunctionCall call = special_function_call(node.op);
  bool single = node.dtype != DType::kFloat64;
  std::string text = call.function;
  if (call.typed) text += single ? "_f32" : "_f64";
  text += "(";
  for (int slot = 0; slot < ir::opcode_arity(node.op); ++slot) {
    if (slot > 0) text += ", ";
    text += call.typed || !single ? value(node.args[slot]) : "(double)" + value(node.args[slot]);
  }
  if (call.precision_flag) text += single ? ", 1" : ", 0";
  text += ")";
  return call.typed || !single ? text : "((float)" + text + ")";
}

std::string NodeExpressions::integer_helper(const char* name, DType type, const Node& node) const {
  if (ir::is_floating(type)) {
    return "kiln_" + std::string(name) + "_" + helper_suffix(type) + "(" + value(node.args[0]) +
           ", " + value(node.args[1]) + ")";
  }
  // bool computes as uint8 and is normalised back.
  DType as = type == DType::kBool ? DType::kUInt8 : type;
  std::string text = "kiln_" + std::string(name) + "_" + helper_suffix(as) + "(" +
                     value(node.args[0]) + ", " + value(node.args[1]) + ")";
  return type == DType::kBool ? "(" + text + " != 0)" : text;
}

}  // namespace kiln::codegen
