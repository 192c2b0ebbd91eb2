#include "kiln/ir/graph.h"

#include <cstdio>

namespace kiln::ir {
namespace {

// The last opcode of the enum: opcode_from_name walks every code up to it.
constexpr OpCode kLastOpCode = OpCode::kFrexpExponent;

std::string sizes_text(const std::vector<int64_t>& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) text += ",";
    text += std::to_string(sizes[i]);
  }
  return text + "]";
}

std::string value_list(const std::vector<GraphValueId>& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) text += ", ";
    text += values[i] == kNoValue ? std::string("_") : "v" + std::to_string(values[i]);
  }
  return text;
}

const char* kind_name(GraphNodeKind kind) {
  switch (kind) {
    case GraphNodeKind::kPointwise: return "pointwise";
    case GraphNodeKind::kReduction: return "reduction";
    case GraphNodeKind::kExtern: return "extern";
  }
  return "?";
}

// Problems of one fragment: operands defined before use, loads in range.
std::string check_fragment(const std::vector<Node>& fragment, size_t inputs, bool epilogue) {
  if (fragment.empty()) return "empty expression";
  for (size_t i = 0; i < fragment.size(); ++i) {
    const Node& node = fragment[i];
    if (node.op == OpCode::kLoad && (epilogue || node.integer < 0 ||
                                     static_cast<size_t>(node.integer) >= inputs)) {
      return "load " + std::to_string(node.integer) + " out of range";
    }
    if (node.op == OpCode::kAccumulator && !epilogue) return "accumulator outside an epilogue";
    int arity = node.op == OpCode::kCast ? 1 : opcode_arity(node.op);
    for (int a = 0; a < arity; ++a) {
      if (node.args[a] < 0 || static_cast<size_t>(node.args[a]) >= i) {
        return "node " + std::to_string(i) + " reads an operand not defined before it";
      }
    }
  }
  return "";
}

}  // namespace

std::optional<OpCode> opcode_from_name(std::string_view name) {
  for (int code = 0; code <= static_cast<int>(kLastOpCode); ++code) {
    if (name == opcode_name(static_cast<OpCode>(code))) return static_cast<OpCode>(code);
  }
  return std::nullopt;
}

std::string check_graph(const Graph& graph) {
  const int value_count = static_cast<int>(graph.values.size());
  std::vector<bool> defined(value_count, false);
  auto in_range = [&](GraphValueId value) { return value >= 0 && value < value_count; };
  for (GraphValueId input : graph.inputs) {
    if (!in_range(input) || defined[input]) return "bad or repeated graph input v" + std::to_string(input);
    defined[input] = true;
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const GraphNode& node = graph.nodes[n];
    const std::string where = "node " + std::to_string(n) + " (" + node.label + "): ";
    for (GraphValueId input : node.inputs) {
      if (!in_range(input) || !defined[input]) return where + "reads v" + std::to_string(input) + " before it is written";
    }
    for (GraphValueId output : node.outputs) {
      if (output == kNoValue) continue;
      if (!in_range(output) || defined[output]) return where + "writes v" + std::to_string(output) + " twice";
      defined[output] = true;
    }
    if (node.kind == GraphNodeKind::kExtern) continue;
    if (node.outputs.size() != 1 || node.outputs[0] == kNoValue) return where + "needs one output";
    std::string problem = check_fragment(node.expression, node.inputs.size(), false);
    if (problem.empty() && node.kind == GraphNodeKind::kReduction) {
      if (node.inputs.empty()) return where + "reduces nothing";
      const size_t rank = graph.values[node.inputs[0]].sizes.size();
      for (int dim : node.reduced_dims) {
        if (dim < 0 || static_cast<size_t>(dim) >= std::max<size_t>(rank, 1)) return where + "bad reduced dim";
      }
      problem = check_fragment(node.epilogue, 0, true);
    }
    if (!problem.empty()) return where + problem;
  }
  for (GraphValueId output : graph.outputs) {
    if (!in_range(output) || !defined[output]) return "graph output v" + std::to_string(output) + " is never written";
  }
  return "";
}

std::string print_fragment(const std::vector<Node>& fragment) {
  std::string text;
  char buffer[64];
  for (size_t i = 0; i < fragment.size(); ++i) {
    const Node& node = fragment[i];
    if (i) text += "; ";
    text += "%" + std::to_string(i) + "=" + opcode_name(node.op);
    switch (node.op) {
      case OpCode::kLoad:
        text += " " + std::to_string(node.integer);
        continue;
      case OpCode::kConstant:
        std::snprintf(buffer, sizeof buffer, " %.17g/%lld:", node.real, static_cast<long long>(node.integer));
        text += buffer;
        text += dtype_name(node.dtype);
        continue;
      case OpCode::kCast:
        text += std::string(":") + dtype_name(node.dtype);
        break;
      case OpCode::kAccumulator:
        if (node.integer != 0) text += " " + std::to_string(node.integer);
        continue;
      default:
        break;
    }
    int arity = node.op == OpCode::kCast ? 1 : opcode_arity(node.op);
    for (int a = 0; a < arity; ++a) text += " %" + std::to_string(node.args[a]);
  }
  return text;
}

std::string print_graph(const Graph& graph) {
  std::string text = "graph(" + value_list(graph.inputs) + ")\n";
  auto describe = [&](GraphValueId value) {
    if (value == kNoValue) return std::string("_");
    const TensorValue& tensor = graph.values[value];
    return "v" + std::to_string(value) + ":" + dtype_name(tensor.dtype) + sizes_text(tensor.sizes);
  };
  for (const GraphNode& node : graph.nodes) {
    std::string outputs;
    for (size_t i = 0; i < node.outputs.size(); ++i) outputs += (i ? ", " : "") + describe(node.outputs[i]);
    text += "  " + outputs + " = " + kind_name(node.kind) + " " + node.label + "(" +
            value_list(node.inputs) + ")";
    if (node.kind != GraphNodeKind::kExtern) text += " {" + print_fragment(node.expression) + "}";
    if (node.kind == GraphNodeKind::kReduction) {
      std::vector<int64_t> dims(node.reduced_dims.begin(), node.reduced_dims.end());
      text += std::string(" ") + reduce_op_name(node.reduce_op) + sizes_text(dims) + " epilogue {" +
              print_fragment(node.epilogue) + "}";
    }
    if (node.aliases_input) text += " aliases";
    if (node.has_side_effects) text += " side-effects";
    text += "\n";
  }
  return text + "return (" + value_list(graph.outputs) + ")\n";
}

}  // namespace kiln::ir
