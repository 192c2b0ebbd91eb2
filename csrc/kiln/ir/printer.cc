#include "kiln/ir/printer.h"

#include <cstdio>
#include <sstream>

#include "kiln/base/hash.h"

namespace kiln::ir {
namespace {

// Shortest text that reads back as the same double.
std::string format_real(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

void print_node(std::ostringstream& out, ValueId id, const Node& node) {
  out << "  %" << id << " = " << opcode_name(node.op);
  int arity = opcode_arity(node.op);
  switch (node.op) {
    case OpCode::kLoad:
    case OpCode::kIndexedLoad:
    case OpCode::kScalar:
    case OpCode::kCoordinate:
    case OpCode::kRandomBits: out << " " << node.integer; break;
    case OpCode::kAccumulator:
      if (node.integer != 0) out << " " << node.integer;
      break;
    case OpCode::kConstant:
      if (is_integer(node.dtype)) out << " " << node.integer;
      else out << " " << format_real(node.real);
      break;
    case OpCode::kCast:
      if (static_cast<DType>(node.integer) != node.dtype) {
        out << " via " << dtype_name(static_cast<DType>(node.integer));
      }
      break;
    default: break;
  }
  for (int slot = 0; slot < arity; ++slot) out << (slot == 0 ? " %" : ", %") << node.args[slot];
  out << " : " << dtype_name(node.dtype) << "\n";
}

std::string join(const std::vector<int64_t>& numbers) {
  std::string text;
  for (size_t i = 0; i < numbers.size(); ++i) text += (i == 0 ? "" : ",") + std::to_string(numbers[i]);
  return text;
}

std::string print_body(const Kernel& kernel) {
  std::ostringstream out;
  const char* kinds[] = {"pointwise", "reduction", "row"};
  out << kinds[static_cast<int>(kernel.kind)] << " rank=" << kernel.rank;
  if (kernel.kind == KernelKind::kReduction) {
    out << " kept=" << kernel.kept_rank << " " << reduce_op_name(kernel.reduction.op) << " "
        << (kernel.reduction.inner ? "inner" : "outer") << " of %" << kernel.reduction.input;
  }
  if (kernel.kind == KernelKind::kRow) {
    out << " kept=" << kernel.kept_rank;
    for (const Reduction& stage : kernel.stages) out << " " << reduce_op_name(stage.op) << " of %" << stage.input;
  }
  if (kernel.single_threaded) out << " single_threaded";
  if (!kernel.fixed_shape.empty()) {
    out << " fixed sizes=" << join(kernel.fixed_shape.sizes) << " strides=";
    for (size_t i = 0; i < kernel.fixed_shape.strides.size(); ++i) {
      out << (i == 0 ? "" : ";") << join(kernel.fixed_shape.strides[i]);
    }
  }
  out << "\n";
  for (size_t i = 0; i < kernel.inputs.size(); ++i) {
    out << "  input " << i << ": " << dtype_name(kernel.inputs[i].dtype) << " "
        << static_cast<char>(kernel.inputs[i].layout) << "\n";
  }
  for (size_t i = 0; i < kernel.outputs.size(); ++i) {
    out << "  output " << i << ": " << dtype_name(kernel.outputs[i].dtype) << " "
        << static_cast<char>(kernel.outputs[i].layout) << "\n";
  }
  for (size_t i = 0; i < kernel.scalars.size(); ++i) {
    out << "  scalar " << i << ": " << dtype_name(kernel.scalars[i]) << "\n";
  }
  for (size_t i = 0; i < kernel.nodes.size(); ++i) {
    print_node(out, static_cast<ValueId>(i), kernel.nodes[i]);
  }
  for (size_t i = 0; i < kernel.results.size(); ++i) {
    out << "  " << (kernel.store_accumulates[i] ? "accumulate " : "store ") << i << " %"
        << kernel.results[i];
    if (kernel.store_offsets[i] != kNoValue) out << " at +%" << kernel.store_offsets[i];
    out << "\n";
  }
  return out.str();
}

}  // namespace

std::string print(const Kernel& kernel) { return "kernel " + kernel.name + " " + print_body(kernel); }

uint64_t stable_hash(const Kernel& kernel) { return hash_64(print_body(kernel)); }

}  // namespace kiln::ir
