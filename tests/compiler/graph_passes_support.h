// Helpers of the graph pass tests (graph_passes_test.cc): a graph builder,
// check_fusion (which simulates a fused program's steps and compares what each
// kernel stores with what the graph computes) and a random graph generator.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kiln/compiler/passes/fusion.h"
#include "kiln/ir/graph.h"

namespace kiln::compiler::fusion_testing {

using ir::GraphNodeKind;
using ir::GraphValueId;
using ir::Node;
using ir::OpCode;
using Sizes = std::vector<int64_t>;
using Values = std::vector<GraphValueId>;
inline const Sizes kMatrix = {4, 8};

inline Node leaf(OpCode op, int64_t integer = 0, double real = 0.0) {
  Node node;
  node.op = op;
  node.integer = integer;
  node.real = real;
  return node;
}

inline Node apply(OpCode op, ir::ValueId a, ir::ValueId b = ir::kNoValue) {
  Node node;
  node.op = op;
  node.args[0] = a;
  node.args[1] = b;
  return node;
}

// Builds graphs node by node; every value is float32.
struct GraphMaker {
  ir::Graph graph;

  GraphValueId value(const Sizes& sizes) {
    graph.values.push_back({ir::DType::kFloat32, sizes});
    return static_cast<GraphValueId>(graph.values.size() - 1);
  }
  GraphValueId input(const Sizes& sizes) {
    graph.inputs.push_back(value(sizes));
    return graph.inputs.back();
  }
  // A pointwise node combining all of `inputs` with `op` ({load 0, load 1, add, ...}),
  // of the inputs' broadcast sizes.
  GraphValueId pointwise(const std::vector<GraphValueId>& inputs, OpCode op = OpCode::kAdd) {
    ir::GraphNode node;
    node.label = std::string("aten::") + ir::opcode_name(op);
    node.inputs = inputs;
    Sizes sizes;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Sizes& input_sizes = graph.values[inputs[k]].sizes;
      sizes.resize(std::max(sizes.size(), input_sizes.size()), 1);
      for (size_t d = 0; d < input_sizes.size(); ++d) sizes[d] = std::max(sizes[d], input_sizes[d]);
      node.expression.push_back(leaf(OpCode::kLoad, static_cast<int64_t>(k)));
      if (k > 0) node.expression.push_back(apply(op, node.expression.size() - 2, node.expression.size() - 1));
    }
    node.outputs = {value(sizes)};
    graph.nodes.push_back(node);
    return node.outputs[0];
  }
  // Divides `input` by a constant: {load 0, constant, divide}.
  GraphValueId scale(GraphValueId input, double divisor) {
    GraphValueId result = pointwise({input});
    graph.nodes.back().label = "aten::div.Scalar";
    graph.nodes.back().expression = {leaf(OpCode::kLoad), leaf(OpCode::kConstant, 0, divisor),
                                     apply(OpCode::kDivide, 0, 1)};
    return result;
  }
  // Sums the product of `inputs` over `dims` (kept as size 1): prologue
  // {load 0, load 1, multiply, ...}, epilogue {accumulator}.
  GraphValueId reduction(const std::vector<GraphValueId>& inputs, const std::vector<int>& dims) {
    Sizes sizes = graph.values[inputs[0]].sizes;
    pointwise(inputs, OpCode::kMultiply);
    ir::GraphNode& node = graph.nodes.back();
    node.kind = GraphNodeKind::kReduction;
    node.label = "aten::sum.dim_IntList";
    node.reduced_dims = dims;
    node.epilogue = {leaf(OpCode::kAccumulator)};
    for (int dim : dims) sizes[dim] = 1;
    graph.values[node.outputs[0]].sizes = sizes;
    return node.outputs[0];
  }
  std::vector<GraphValueId> extern_call(const std::vector<GraphValueId>& inputs,
                                        const std::vector<Sizes>& outputs, bool side_effects = false) {
    ir::GraphNode node;
    node.kind = GraphNodeKind::kExtern;
    node.label = "aten::mm";
    node.inputs = inputs;
    for (const Sizes& sizes : outputs) node.outputs.push_back(value(sizes));
    node.has_side_effects = side_effects;
    node.call = static_cast<int32_t>(graph.nodes.size());
    graph.nodes.push_back(node);
    return node.outputs;
  }
  void output(GraphValueId value) { graph.outputs.push_back(value); }
};

// Checks `fusion` of `graph` (returns the first problem, or ""): every node is
// in one kernel or extern step; running the steps in order, every value is
// produced before a step reads it and every graph output is produced; each
// kernel stores exactly the values read outside it, each computed as the graph
// computes it, and computes each node at that node's sizes; kernels stay
// within the launcher's operand limit; kernels stay on their side of calls
// with side effects.
std::string check_fusion(const ir::Graph& graph, const FusionResult& fusion);

// Inputs plus outputs of `kernel`.
size_t operand_count(const FusedKernel& kernel);

// Fuses `graph` after check_graph accepts it, and fails the test unless
// check_fusion accepts the result.
FusionResult checked_fuse(const ir::Graph& graph);

// Per step, the kernel it runs, or -1 for an extern call.
std::vector<int> step_kernels(const FusionResult& fusion);

// A random graph (see graph_passes_support.cc); `wide` ones have many inputs.
ir::Graph random_graph(std::mt19937& generator, bool wide);

}  // namespace kiln::compiler::fusion_testing
