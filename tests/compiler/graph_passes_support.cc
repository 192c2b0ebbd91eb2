#include "graph_passes_support.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace kiln::compiler::fusion_testing {
namespace {

// Expressions interned as ids, so that equal computations get equal ids.
class Symbols {
 public:
  int intern(const std::string& text) { return ids_.emplace(text, static_cast<int>(ids_.size())).first->second; }
  // The id of each node of `fragment`, with loads reading `loads` and the
  // accumulator reading `accumulator`, or in a row kernel (`row` set) stage
  // `integer`'s fold of the value it names.
  std::vector<int> evaluate(const std::vector<Node>& fragment, const std::vector<int>& loads, int accumulator,
                            const FusedKernel* row = nullptr) {
    std::vector<int> ids;
    for (const Node& node : fragment) {
      std::string text = ir::opcode_name(node.op);
      if (node.op == OpCode::kLoad) {
        ids.push_back(loads.at(node.integer));
        continue;
      }
      if (node.op == OpCode::kAccumulator && row != nullptr) {
        const size_t stage = static_cast<size_t>(node.integer);
        if (stage >= row->stage_values.size() || static_cast<size_t>(row->stage_values[stage]) >= ids.size()) {
          ids.push_back(intern("a stage read before its value"));
          continue;
        }
        ids.push_back(reduce(row->stage_ops[stage], row->reduced_dims, ids[row->stage_values[stage]]));
        continue;
      }
      if (node.op == OpCode::kAccumulator) {
        ids.push_back(accumulator);
        continue;
      }
      char fields[64];  // every bit of `real`: nearby constants must not compare equal
      std::snprintf(fields, sizeof fields, " %s %a %lld", ir::dtype_name(node.dtype), node.real,
                    static_cast<long long>(node.integer));
      text += fields;
      for (int a = 0; a < ir::opcode_arity(node.op); ++a) text += " #" + std::to_string(ids.at(node.args[a]));
      ids.push_back(intern(text));
    }
    return ids;
  }
  int reduce(ir::ReduceOp op, const std::vector<int>& dims, int folded) {
    std::string text = ir::reduce_op_name(op);
    for (int dim : dims) text += " " + std::to_string(dim);
    return intern(text + " #" + std::to_string(folded));
  }

 private:
  std::map<std::string, int> ids_;
};

}  // namespace

size_t operand_count(const FusedKernel& kernel) { return kernel.inputs.size() + kernel.outputs.size(); }

// Checks `fusion` of `graph` (returns the first problem, or ""): every node is
// in one kernel or extern step; running the steps in order, every value is
// produced before a step reads it and every graph output is produced; each
// kernel stores exactly the values read outside it, each computed as the graph
// computes it, and computes each node at that node's sizes; kernels stay
// within the launcher's operand limit; kernels stay on their side of calls
// with side effects.
std::string check_fusion(const ir::Graph& graph, const FusionResult& fusion) {
  std::vector<int> placed(graph.nodes.size(), 0);
  std::vector<int> kernel_of(graph.nodes.size(), -1);
  for (size_t k = 0; k < fusion.kernels.size(); ++k) {
    for (int n : fusion.kernels[k].nodes) {
      placed.at(n) += 1;
      kernel_of[n] = static_cast<int>(k);
    }
  }
  for (const ProgramStep& step : fusion.steps) {
    if (step.kind == ProgramStep::Kind::kExtern) placed.at(step.index) += 1;
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (placed[n] != 1) return "node " + std::to_string(n) + " placed " + std::to_string(placed[n]) + " times";
  }
  // Calls with side effects keep their place among the nodes: a kernel runs
  // before such a call exactly when all its nodes come before it.
  for (size_t s = 0; s < fusion.steps.size(); ++s) {
    const ProgramStep& call = fusion.steps[s];
    if (call.kind != ProgramStep::Kind::kExtern || !graph.nodes[call.index].has_side_effects) continue;
    for (size_t t = 0; t < fusion.steps.size(); ++t) {
      if (fusion.steps[t].kind != ProgramStep::Kind::kKernel) continue;
      const std::vector<int>& nodes = fusion.kernels.at(fusion.steps[t].index).nodes;
      if (nodes.empty()) return "kernel " + std::to_string(fusion.steps[t].index) + " has no nodes";
      if (nodes.front() < call.index && nodes.back() > call.index) return "a kernel straddles node " + std::to_string(call.index);
      if ((t < s) != (nodes.back() < call.index)) return "a kernel moves past node " + std::to_string(call.index);
    }
  }
  // The graph's own computation, as symbols: graph inputs and extern results are opaque.
  Symbols symbols;
  std::vector<int> meaning(graph.values.size(), -1);
  for (size_t v = 0; v < graph.values.size(); ++v) meaning[v] = symbols.intern("value " + std::to_string(v));
  auto loads_of = [&](const std::vector<GraphValueId>& values) {
    std::vector<int> loads;
    for (GraphValueId value : values) loads.push_back(meaning[value]);
    return loads;
  };
  for (const ir::GraphNode& node : graph.nodes) {
    if (node.kind == GraphNodeKind::kExtern) continue;
    int result = symbols.evaluate(node.expression, loads_of(node.inputs), -1).back();
    if (node.kind == GraphNodeKind::kReduction) {
      result = symbols.evaluate(node.epilogue, {}, symbols.reduce(node.reduce_op, node.reduced_dims, result)).back();
    }
    meaning[node.outputs[0]] = result;
  }
  std::vector<bool> ready(graph.values.size(), false);
  for (GraphValueId input : graph.inputs) ready[input] = true;
  size_t kernel_steps = 0;
  for (const ProgramStep& step : fusion.steps) {
    if (step.kind == ProgramStep::Kind::kExtern) {
      const ir::GraphNode& node = graph.nodes.at(step.index);
      for (GraphValueId input : node.inputs) {
        if (!ready[input]) return "extern node " + std::to_string(step.index) + " reads v" + std::to_string(input) + " before it is produced";
      }
      for (GraphValueId output : node.outputs) {
        if (output != ir::kNoValue) ready[output] = true;
      }
      continue;
    }
    ++kernel_steps;
    const FusedKernel& kernel = fusion.kernels.at(step.index);
    const std::string where = "kernel " + std::to_string(step.index) + ": ";
    if (operand_count(kernel) > static_cast<size_t>(ir::kMaxOperands)) return where + "too many operands";
    // Each node computes at the kernel's iteration sizes; epilogue nodes at the reduction result's.
    // A row kernel's nodes compute at the iteration sizes or, as row values,
    // at the rows' (the reduced dims kept as 1, or dropped); a node of the
    // iteration sizes reads row values only in the first form.
    const ir::GraphNode* reduction = nullptr;
    Sizes row_sizes = kernel.iteration_sizes;
    for (int dim : kernel.reduced_dims) {
      if (kernel.kind == ir::KernelKind::kRow) row_sizes.at(dim) = 1;
    }
    for (int n : kernel.nodes) {
      const ir::GraphNode& node = graph.nodes[n];
      if (node.kind == GraphNodeKind::kReduction) {
        reduction = &node;
        if (graph.values[node.inputs[0]].sizes != kernel.iteration_sizes) return where + "reduces at other sizes";
        if (kernel.kind == ir::KernelKind::kRow && node.reduced_dims != kernel.reduced_dims) {
          return where + "reduces other dims than its rows";
        }
      } else if (kernel.kind == ir::KernelKind::kRow) {
        const Sizes& sizes = graph.values[node.outputs[0]].sizes;
        if (sizes != kernel.iteration_sizes && sizes.size() != kernel.iteration_sizes.size() - kernel.reduced_dims.size() &&
            sizes != row_sizes) {
          return where + "computes node " + std::to_string(n) + " at other sizes";
        }
        for (GraphValueId input : node.inputs) {
          const bool inside = std::any_of(kernel.nodes.begin(), kernel.nodes.end(), [&](int member) {
            return graph.nodes[member].outputs[0] == input;
          });
          const Sizes& input_sizes = graph.values[input].sizes;
          if (inside && sizes == kernel.iteration_sizes && input_sizes != sizes && input_sizes != row_sizes) {
            return where + "node " + std::to_string(n) + " broadcasts a row value across rows";
          }
        }
      } else if (graph.values[node.outputs[0]].sizes !=
                 (reduction ? graph.values[reduction->outputs[0]].sizes : kernel.iteration_sizes)) {
        return where + "computes node " + std::to_string(n) + " at other sizes";
      }
    }
    if ((reduction != nullptr) != (kernel.kind != ir::KernelKind::kPointwise)) return where + "of the wrong kind";
    for (GraphValueId input : kernel.inputs) {
      if (!ready[input]) return where + "reads v" + std::to_string(input) + " before it is produced";
    }
    std::vector<int> ids = symbols.evaluate(kernel.expression, loads_of(kernel.inputs), -1,
                                            kernel.kind == ir::KernelKind::kRow ? &kernel : nullptr);
    std::vector<int> stored_ids = ids;
    if (kernel.kind == ir::KernelKind::kReduction) {
      int folded = symbols.reduce(kernel.reduce_op, kernel.reduced_dims, ids.at(kernel.reduced_value));
      stored_ids = symbols.evaluate(kernel.epilogue, loads_of(kernel.inputs), folded);
    }
    if (kernel.results.size() != kernel.outputs.size()) return where + "results and outputs differ in number";
    for (size_t i = 0; i < kernel.outputs.size(); ++i) {
      const GraphValueId output = kernel.outputs[i];
      const std::string value = "v" + std::to_string(output);
      if (stored_ids.at(kernel.results[i]) != meaning[output]) return where + "stores a wrong " + value;
      bool read_outside = std::count(graph.outputs.begin(), graph.outputs.end(), output) > 0;
      for (size_t n = 0; n < graph.nodes.size(); ++n) {
        bool reads = std::count(graph.nodes[n].inputs.begin(), graph.nodes[n].inputs.end(), output) > 0;
        read_outside = read_outside || (reads && kernel_of[n] != step.index);
      }
      if (!read_outside) return where + "stores " + value + ", which only the kernel reads";
      ready[output] = true;
    }
  }
  if (kernel_steps != fusion.kernels.size()) return "not every kernel is a step exactly once";
  for (GraphValueId output : graph.outputs) {
    if (!ready[output]) return "graph output v" + std::to_string(output) + " is never produced";
  }
  return "";
}

// Fuses `graph` after check_graph accepts it, and fails the test unless
// check_fusion accepts the result.
FusionResult checked_fuse(const ir::Graph& graph) {
  EXPECT_EQ(ir::check_graph(graph), "");
  FusionResult fusion = fuse(graph);
  EXPECT_EQ(check_fusion(graph, fusion), "") << ir::print_graph(graph) << print_fusion(graph, fusion);
  return fusion;
}

std::vector<int> step_kernels(const FusionResult& fusion) {
  std::vector<int> kernels;
  for (const ProgramStep& step : fusion.steps) kernels.push_back(step.kind == ProgramStep::Kind::kKernel ? step.index : -1);
  return kernels;
}

// A random graph over 1-3 inputs: pointwise nodes of 1-3 inputs (broadcasting),
// sums of 1-2 inputs of one size, divisions by a constant (epilogue material)
// and extern calls of 1-2 results, some with side effects. Nodes mostly read
// recent values, so chains form. Sizes come from a few that broadcast.
ir::Graph random_graph(std::mt19937& generator, bool wide) {
  const std::vector<Sizes> shapes = {{4, 8}, {4, 1}, {1, 8}};
  auto pick = [&](size_t count) { return std::uniform_int_distribution<size_t>(0, count - 1)(generator); };
  auto shape = [&]() { return wide && pick(4) ? kMatrix : shapes[pick(3)]; };
  GraphMaker maker;
  Values values;
  auto pick_value = [&]() {
    return pick(2) ? values[values.size() - 1 - pick(std::min<size_t>(values.size(), 3))] : values[pick(values.size())];
  };
  for (size_t i = 0, count = wide ? 16 + pick(16) : 1 + pick(3); i < count; ++i) {
    values.push_back(maker.input(shape()));
  }
  for (size_t n = 0, count = wide ? 10 + pick(20) : 2 + pick(14); n < count; ++n) {
    // Wide graphs: mostly long pointwise chains over many inputs, to reach the operand cap.
    const size_t kind = wide && pick(4) ? 1 : pick(7);
    Values inputs;
    for (size_t i = 0, arity = 1 + pick(kind < 3 ? 3 : 2); i < arity; ++i) {
      inputs.push_back(wide && i == 0 ? values.back() : pick_value());
    }
    if (kind < 3) {
      values.push_back(maker.pointwise(inputs, kind == 0 ? OpCode::kMultiply : OpCode::kAdd));
    } else if (kind == 3) {
      values.push_back(maker.scale(inputs[0], 2.0));
    } else if (kind < 6) {
      // Often a second input, of the first one's sizes.
      Values same_sizes;
      for (GraphValueId value : values) {
        if (maker.graph.values[value].sizes == maker.graph.values[inputs[0]].sizes) same_sizes.push_back(value);
      }
      inputs = {inputs[0]};
      if (pick(2)) inputs.push_back(same_sizes[pick(same_sizes.size())]);
      const std::vector<std::vector<int>> dims = {{0}, {1}, {0, 1}};
      values.push_back(maker.reduction(inputs, dims[pick(3)]));
    } else {
      std::vector<Sizes> outputs = {shape()};
      if (pick(2)) outputs.push_back(shape());
      for (GraphValueId result : maker.extern_call(inputs, outputs, pick(4) == 0)) values.push_back(result);
    }
  }
  maker.output(values.back());
  for (GraphValueId value : values) {
    if (pick(5) == 0) maker.output(value);
  }
  return maker.graph;
}

}  // namespace kiln::compiler::fusion_testing
