#include "kiln/compiler/codegen/vector_math.h"

#include <array>

namespace kiln::codegen {
namespace {

constexpr std::array<std::string_view, 21> kUnary = {
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "log", "log2", "log10", "log1p", "exp", "exp2", "expm1", "erf", "erfc"};
constexpr std::array<std::string_view, 3> kBinary = {"atan2", "pow", "hypot"};

bool is_binary(std::string_view name) {
  for (std::string_view binary : kBinary) {
    if (binary == name) return true;
  }
  return false;
}

// The libm name of a node's function, before the type suffix. Most opcodes
// are named as their libm function (ops.cc).
std::string_view function_of(const ir::Node& node) {
  switch (node.op) {
    // float32 exp (and sigmoid through it) is Kiln's own polynomial (prelude.cc).
    case ir::OpCode::kExp:
    case ir::OpCode::kSigmoid:
      return node.dtype == ir::DType::kFloat32 ? "" : "exp";
    case ir::OpCode::kPower:
      return ir::is_floating(node.dtype) ? "pow" : "";
    default: {
      std::string_view name = ir::opcode_name(node.op);
      return is_vector_math_function(name) ? name : "";
    }
  }
}

// One routed function: `base` its libm name, `single` for float.
std::string definition(std::string_view base, bool single) {
  const std::string name = std::string(base) + (single ? "f" : "");
  const std::string type = single ? "float" : "double";
  const std::string lanes = single ? "KILN_VM_FLOAT_LANES" : "KILN_VM_DOUBLE_LANES";
  const std::string reference_type = single ? "kiln_vm_floats" : "kiln_vm_doubles";
  const bool binary = is_binary(base);
  const std::string signature = binary ? "2" : "1";
  const std::string reference = std::string(single ? "KILN_VM_REFERENCE_F" : "KILN_VM_REFERENCE_D") + signature + "(" +
                                name + ")";
  const std::string routed = "kiln_vm_" + name;
  std::string text = "#ifdef KILN_VM_ROUTED\n";
  // The reference variant, and the routed function's declaration.
  text += reference_type + " " + reference + "(" + reference_type + (binary ? ", " + reference_type : "") + ");\n";
  text += type + " " + routed + "(" + type + (binary ? ", " + type : "") + ") KILN_VM_DECLARE;\n";
  // Runs `count` values through the reference, a chunk of its lanes at a time.
  text += "static void " + routed + "_apply(" + type + "* x, " + (binary ? "const " + type + "* y, " : "") +
          "int count) {\n"
          "  for (int start = 0; start < count; start += " + lanes + ") {\n"
          "    " + reference_type + " a" + (binary ? ", b" : "") + ";\n"
          "    for (int lane = 0; lane < " + lanes + "; ++lane) {\n"
          "      int from = start + lane < count ? start + lane : start;\n"
          "      a[lane] = x[from];\n" + (binary ? "      b[lane] = y[from];\n" : "") +
          "    }\n"
          "    a = " + reference + "(a" + (binary ? ", b" : "") + ");\n"
          "    for (int lane = 0; lane < " + lanes + " && start + lane < count; ++lane) x[start + lane] = a[lane];\n"
          "  }\n"
          "}\n";
  // The scalar version, under the routed name (an alias the C compiler does
  // not see, so it keeps treating the name as an external `simd` function).
  text += "__attribute__((used)) static " + type + " " + routed + "_scalar(" + type + " x" +
          (binary ? ", " + type + " y" : "") + ") {\n  " + routed + "_apply(&x, " + (binary ? "&y, " : "") +
          "1);\n  return x;\n}\n";
  text += "__asm__(\".globl " + routed + "\\n.hidden " + routed + "\\n.set " + routed + ", " + routed +
          "_scalar\");\n";
  // The vector variants the vectoriser may call: ISA letter, lanes, guard.
  struct Variant {
    const char* isa;
    int float_lanes;
    const char* guard;
  };
  const Variant variants[] = {{"b", 4, nullptr}, {"c", 8, "__AVX__"}, {"d", 8, "__AVX2__"}, {"e", 16, "__AVX512F__"}};
  for (const Variant& variant : variants) {
    const int count = single ? variant.float_lanes : variant.float_lanes / 2;
    const int bytes = count * (single ? 4 : 8);
    const std::string vector = "kiln_vm_" + std::string(single ? "f" : "d") + std::to_string(count);
    const std::string mangled = "_ZGV" + std::string(variant.isa) + "N" + std::to_string(count) +
                                (binary ? "vv_" : "v_") + routed;
    if (variant.guard != nullptr) text += std::string("#ifdef ") + variant.guard + "\n";
    text += "__attribute__((visibility(\"hidden\"))) " + vector + " " + mangled + "(" + vector + " x" +
            (binary ? ", " + vector + " y" : "") + ") {\n"
            "  " + type + " a[" + std::to_string(count) + "]" + (binary ? ", b[" + std::to_string(count) + "]" : "") +
            ";\n  __builtin_memcpy(a, &x, " + std::to_string(bytes) + ");\n" +
            (binary ? "  __builtin_memcpy(b, &y, " + std::to_string(bytes) + ");\n" : "") +
            "  " + routed + "_apply(a, " + (binary ? "b, " : "") + std::to_string(count) + ");\n"
            "  __builtin_memcpy(&x, a, " + std::to_string(bytes) + ");\n  return x;\n}\n";
    if (variant.guard != nullptr) text += "#endif\n";
  }
  text += "#else\n#define " + routed + " __builtin_" + name + "\n#endif\n";
  return text;
}

}  // namespace

bool is_vector_math_function(std::string_view name) {
  for (std::string_view unary : kUnary) {
    if (unary == name) return true;
  }
  return is_binary(name);
}

std::string vector_math_call_of(const ir::Node& node) {
  std::string_view base = function_of(node);
  if (base.empty()) return "";
  return std::string(base) + (node.dtype == ir::DType::kFloat64 ? "" : "f");
}

std::string vector_math_definitions(const std::set<std::string>& functions) {
  std::string text;
  for (const std::string& function : functions) {
    const bool single = !function.empty() && function.back() == 'f' && is_vector_math_function(
        std::string_view(function).substr(0, function.size() - 1));
    const std::string base = single ? function.substr(0, function.size() - 1) : function;
    text += definition(base, single);
  }
  return text;
}

}  // namespace kiln::codegen
