// Tests of the graph passes of the compiled path: check_graph and friends
// (ir/graph.h), dead code elimination and fusion. Every fusion result is also
// run through check_fusion, which simulates the program's steps and compares
// what each kernel stores with what the graph computes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/compiler/passes/dead_code.h"
#include "kiln/compiler/passes/fusion.h"
#include "kiln/ir/graph.h"

namespace kiln::compiler {
namespace {

using ir::GraphNodeKind;
using ir::GraphValueId;
using ir::Node;
using ir::OpCode;
using Sizes = std::vector<int64_t>;

Node leaf(OpCode op, int64_t integer = 0, double real = 0.0) {
  Node node;
  node.op = op;
  node.integer = integer;
  node.real = real;
  return node;
}

Node apply(OpCode op, ir::ValueId a, ir::ValueId b = ir::kNoValue) {
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

// Expressions interned as ids, so that equal computations get equal ids.
class Symbols {
 public:
  int intern(const std::string& text) { return ids_.emplace(text, static_cast<int>(ids_.size())).first->second; }
  // The id of each node of `fragment`, with loads reading `loads` and the
  // accumulator reading `accumulator`.
  std::vector<int> evaluate(const std::vector<Node>& fragment, const std::vector<int>& loads, int accumulator) {
    std::vector<int> ids;
    for (const Node& node : fragment) {
      std::string text = ir::opcode_name(node.op);
      if (node.op == OpCode::kLoad) {
        ids.push_back(loads.at(node.integer));
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
    const ir::GraphNode* reduction = nullptr;
    for (int n : kernel.nodes) {
      const ir::GraphNode& node = graph.nodes[n];
      if (node.kind == GraphNodeKind::kReduction) {
        reduction = &node;
        if (graph.values[node.inputs[0]].sizes != kernel.iteration_sizes) return where + "reduces at other sizes";
      } else if (graph.values[node.outputs[0]].sizes !=
                 (reduction ? graph.values[reduction->outputs[0]].sizes : kernel.iteration_sizes)) {
        return where + "computes node " + std::to_string(n) + " at other sizes";
      }
    }
    if ((reduction != nullptr) != (kernel.kind == ir::KernelKind::kReduction)) return where + "of the wrong kind";
    for (GraphValueId input : kernel.inputs) {
      if (!ready[input]) return where + "reads v" + std::to_string(input) + " before it is produced";
    }
    std::vector<int> ids = symbols.evaluate(kernel.expression, loads_of(kernel.inputs), -1);
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

using Values = std::vector<GraphValueId>;
const Sizes kMatrix = {4, 8};

TEST(GraphPasses, PointwiseChainFusesAndStoresOnlyItsEnd) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix), b = maker.input(kMatrix);
  GraphValueId end = maker.pointwise({maker.pointwise({maker.pointwise({a, b}), b}, OpCode::kMultiply), a});
  maker.output(end);
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 1u);
  EXPECT_EQ(fusion.kernels[0].nodes, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(fusion.kernels[0].inputs, (Values{a, b}));
  EXPECT_EQ(fusion.kernels[0].outputs, (Values{end}));
  EXPECT_EQ(fusion.kernels[0].iteration_sizes, kMatrix);
}

TEST(GraphPasses, ExternReaderStoresTheValueAndClosesTheKernel) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix), b = maker.input(kMatrix);
  GraphValueId first = maker.pointwise({a, b});
  GraphValueId called = maker.extern_call({first}, {kMatrix})[0];
  GraphValueId last = maker.pointwise({first, called});
  maker.output(last);
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 2u);
  EXPECT_EQ(step_kernels(fusion), (std::vector<int>{0, -1, 1}));
  EXPECT_EQ(fusion.steps[1].index, 1);  // the extern's graph node
  EXPECT_EQ(fusion.kernels[0].outputs, (Values{first}));
  EXPECT_EQ(fusion.kernels[1].nodes, (std::vector<int>{2}));
  EXPECT_EQ(fusion.kernels[1].outputs, (Values{last}));
}

TEST(GraphPasses, BroadcastOutputStartsANewKernel) {
  GraphMaker maker;
  GraphValueId column = maker.input({4, 1}), matrix = maker.input(kMatrix);
  GraphValueId small = maker.pointwise({column, column}, OpCode::kMultiply);
  GraphValueId wide = maker.pointwise({small, matrix});
  maker.output(wide);
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 2u);
  EXPECT_EQ(fusion.kernels[0].iteration_sizes, (Sizes{4, 1}));
  EXPECT_EQ(fusion.kernels[0].outputs, (Values{small}));
  EXPECT_EQ(fusion.kernels[1].iteration_sizes, kMatrix);
  EXPECT_EQ(fusion.kernels[1].inputs, (Values{small, matrix}));
}

TEST(GraphPasses, PointwiseChainReadOnlyByAReductionBecomesItsPrologue) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix), b = maker.input(kMatrix);
  GraphValueId sum = maker.reduction({maker.pointwise({maker.pointwise({a, b}), a}, OpCode::kMultiply)}, {1});
  maker.output(sum);
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 1u);
  EXPECT_EQ(fusion.kernels[0].kind, ir::KernelKind::kReduction);
  EXPECT_EQ(fusion.kernels[0].nodes, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(fusion.kernels[0].outputs, (Values{sum}));
  EXPECT_EQ(fusion.kernels[0].reduced_dims, (std::vector<int>{1}));
}

TEST(GraphPasses, ChainValueReadElsewhereKeepsTheReductionSeparate) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix), b = maker.input(kMatrix);
  GraphValueId chain = maker.pointwise({maker.pointwise({a, b}), a}, OpCode::kMultiply);
  GraphValueId sum = maker.reduction({chain}, {1});
  maker.output(sum);
  maker.output(maker.pointwise({chain, b}));
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 3u);
  EXPECT_EQ(fusion.kernels[0].outputs, (Values{chain}));
  EXPECT_EQ(fusion.kernels[1].kind, ir::KernelKind::kReduction);
  EXPECT_EQ(fusion.kernels[1].nodes, (std::vector<int>{2}));
}

TEST(GraphPasses, PointwiseReadingOnlyTheReductionJoinsAsEpilogue) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix);
  GraphValueId sum = maker.reduction({a}, {1});
  GraphValueId mean = maker.scale(sum, 8.0);
  maker.output(maker.pointwise({mean, mean}, OpCode::kMultiply));
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 1u);
  EXPECT_EQ(fusion.kernels[0].nodes, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(fusion.kernels[0].outputs, (Values{maker.graph.outputs[0]}));
  // accumulator; constant, divide; multiply (loads of finished values become references)
  EXPECT_EQ(fusion.kernels[0].epilogue.size(), 4u);
}

TEST(GraphPasses, OperandCapStartsANewKernel) {
  GraphMaker maker;
  Values inputs;
  for (int i = 0; i < 20; ++i) inputs.push_back(maker.input(kMatrix));
  GraphValueId sum = maker.pointwise({inputs[0], inputs[1]});
  for (int i = 2; i < 20; ++i) sum = maker.pointwise({sum, inputs[i]});
  maker.output(sum);
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 2u);
  // The first kernel takes nodes while they fit: 15 inputs and the value it hands on.
  EXPECT_EQ(operand_count(fusion.kernels[0]), static_cast<size_t>(ir::kMaxOperands));
  EXPECT_EQ(fusion.kernels[0].nodes.size() + fusion.kernels[1].nodes.size(), 19u);
  EXPECT_LE(operand_count(fusion.kernels[1]), static_cast<size_t>(ir::kMaxOperands));
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

// check_fusion itself must fail on broken programs, or the tests above prove nothing.
TEST(GraphPasses, CheckFusionRejectsBrokenPrograms) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix), b = maker.input(kMatrix);
  GraphValueId first = maker.pointwise({a, b});
  GraphValueId inner = maker.pointwise({first, b});
  GraphValueId called = maker.extern_call({first}, {kMatrix})[0];
  maker.output(maker.pointwise({inner, called}));
  const FusionResult good = checked_fuse(maker.graph);
  ASSERT_EQ(good.kernels.size(), 2u);
  ASSERT_EQ(good.kernels[0].outputs, (Values{first, inner}));
  auto problem = [&](auto&& damage) {
    FusionResult broken = good;
    damage(broken);
    return check_fusion(maker.graph, broken);
  };
  EXPECT_NE(problem([](FusionResult& f) { std::swap(f.steps[0], f.steps[1]); }).find("before it is produced"),
            std::string::npos);
  EXPECT_NE(problem([](FusionResult& f) { f.steps.pop_back(); }).find("not every kernel"), std::string::npos);
  EXPECT_NE(problem([](FusionResult& f) { f.kernels[1].nodes.clear(); }).find("placed 0 times"), std::string::npos);
  EXPECT_NE(problem([](FusionResult& f) { f.kernels[1].iteration_sizes = {4, 1}; }).find("at other sizes"),
            std::string::npos);
  EXPECT_NE(problem([](FusionResult& f) { f.kernels[1].kind = ir::KernelKind::kReduction; }).find("wrong kind"),
            std::string::npos);
  EXPECT_NE(problem([](FusionResult& f) { std::swap(f.kernels[0].results[0], f.kernels[0].results[1]); })
                .find("stores a wrong v"), std::string::npos);
  EXPECT_NE(problem([](FusionResult& f) { f.kernels[0].expression.back().op = OpCode::kSubtract; })
                .find("stores a wrong v"), std::string::npos);
  EXPECT_NE(problem([](FusionResult& f) {
              f.kernels[1].outputs.push_back(f.kernels[1].inputs[0]);
              f.kernels[1].results.push_back(0);
            }).find("which only the kernel reads"), std::string::npos);
  EXPECT_NE(problem([](FusionResult& f) {
              f.kernels[0].outputs.resize(1);
              f.kernels[0].results.resize(1);
            }).find("before it is produced"), std::string::npos);
}

TEST(GraphPasses, ReductionSealsTheKernelsOfItsOtherInputs) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix), b = maker.input(kMatrix);
  GraphValueId other = maker.pointwise({a, a});     // kernel Q
  GraphValueId first = maker.pointwise({b, b});     // kernel P, taken in by the reduction
  GraphValueId sum = maker.reduction({first, other}, {1});
  GraphValueId later = maker.pointwise({other, a}); // must not join Q: the reduction read Q
  maker.output(sum);
  maker.output(later);
  checked_fuse(maker.graph);
}

// A call with side effects may mutate what an earlier node read (through any
// alias), so a kernel holding that node must not move past the call.
TEST(GraphPasses, KernelsOpenAtASideEffectRunBeforeIt) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix);
  GraphValueId before = maker.pointwise({a, a});                    // node 0 reads a
  GraphValueId mutated = maker.extern_call({a}, {kMatrix}, true)[0]; // node 1: like aten::add_(a)
  maker.graph.nodes.back().aliases_input = true;
  GraphValueId after = maker.pointwise({before, before});           // node 2
  maker.output(after);
  maker.output(mutated);
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.steps.size(), 3u) << print_fusion(maker.graph, fusion);
  EXPECT_EQ(step_kernels(fusion), (std::vector<int>{0, -1, 1}));
  EXPECT_EQ(fusion.kernels[0].nodes, (std::vector<int>{0}));
}

TEST(GraphPasses, RandomGraphsFuseIntoValidPrograms) {
  std::mt19937 generator(20261203);
  size_t fused_nodes = 0, reduction_kernels = 0, dead_nodes = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    ir::Graph graph = random_graph(generator, trial % 3 == 2);
    SCOPED_TRACE("trial " + std::to_string(trial));
    FusionResult fusion = checked_fuse(graph);
    for (const FusedKernel& kernel : fusion.kernels) {
      fused_nodes += kernel.nodes.size() - 1;
      reduction_kernels += kernel.kind == ir::KernelKind::kReduction && kernel.nodes.size() > 1;
    }
    auto side_effects = [](const ir::Graph& g) {
      return std::count_if(g.nodes.begin(), g.nodes.end(), [](const ir::GraphNode& n) { return n.has_side_effects; });
    };
    const auto calls = side_effects(graph);
    const size_t removed = eliminate_dead_code(graph);
    EXPECT_EQ(side_effects(graph), calls);
    // What is left is read: every result a node keeps, and a node keeps one unless it has side effects.
    std::vector<bool> read(graph.values.size(), false);
    for (GraphValueId output : graph.outputs) read[output] = true;
    for (const ir::GraphNode& node : graph.nodes) {
      for (GraphValueId input : node.inputs) read[input] = true;
    }
    for (const ir::GraphNode& node : graph.nodes) {
      const bool keeps = std::any_of(node.outputs.begin(), node.outputs.end(), [](GraphValueId v) { return v != ir::kNoValue; });
      EXPECT_TRUE(keeps || node.has_side_effects) << node.label;
      for (GraphValueId output : node.outputs) EXPECT_TRUE(output == ir::kNoValue || read[output]) << node.label;
    }
    dead_nodes += removed;
    checked_fuse(graph);
  }
  // The graphs exercise fusion, not just one kernel per node.
  EXPECT_GT(fused_nodes, 1000u);
  EXPECT_GT(reduction_kernels, 100u);
  EXPECT_GT(dead_nodes, 1000u);
}

TEST(GraphPasses, DeadCodeEliminationKeepsOnlyWhatOutputsAndSideEffectsNeed) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix), b = maker.input(kMatrix);
  maker.pointwise({maker.pointwise({a, b}), a});                    // nodes 0, 1: unused chain
  GraphValueId logged = maker.extern_call({a}, {kMatrix}, true)[0];  // node 2: kept for its side effects
  maker.extern_call({b}, {kMatrix});                                 // node 3: unused call
  Values pair = maker.extern_call({a, b}, {kMatrix, kMatrix});       // node 4: only its first result read
  maker.output(maker.pointwise({pair[0], b}));                       // node 5
  ASSERT_EQ(ir::check_graph(maker.graph), "");
  EXPECT_EQ(eliminate_dead_code(maker.graph), 3);
  const ir::Graph& graph = maker.graph;
  ASSERT_EQ(graph.nodes.size(), 3u);
  EXPECT_TRUE(graph.nodes[0].has_side_effects);
  EXPECT_EQ(graph.nodes[0].outputs, (Values{ir::kNoValue}));
  EXPECT_NE(logged, ir::kNoValue);
  EXPECT_EQ(graph.nodes[1].outputs, (Values{pair[0], ir::kNoValue}));
  EXPECT_EQ(graph.nodes[2].inputs, (Values{pair[0], b}));
  EXPECT_EQ(ir::check_graph(graph), "");
  checked_fuse(graph);
}

TEST(GraphPasses, CheckGraphFindsReadsBeforeWritesAndBadLoads) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix);
  GraphValueId later = maker.value(kMatrix);
  maker.pointwise({a, later});
  EXPECT_NE(ir::check_graph(maker.graph).find("reads v1 before it is written"), std::string::npos);

  GraphMaker loads;
  GraphValueId x = loads.input(kMatrix);
  loads.output(loads.pointwise({x}));
  ASSERT_EQ(ir::check_graph(loads.graph), "");
  loads.graph.nodes[0].expression = {leaf(OpCode::kLoad, 0), leaf(OpCode::kLoad, 1), apply(OpCode::kAdd, 0, 1)};
  EXPECT_NE(ir::check_graph(loads.graph).find("load 1 out of range"), std::string::npos);
  loads.graph.nodes[0].expression = {leaf(OpCode::kLoad, 0), apply(OpCode::kExp, 1)};
  EXPECT_NE(ir::check_graph(loads.graph).find("operand not defined before it"), std::string::npos);
}

TEST(GraphPasses, OpcodeNamesRoundTrip) {
  for (OpCode code : {OpCode::kLoad, OpCode::kAdd, OpCode::kSigmoid, OpCode::kCast, OpCode::kFrexpExponent}) {
    EXPECT_EQ(ir::opcode_from_name(ir::opcode_name(code)), code) << ir::opcode_name(code);
  }
  EXPECT_EQ(ir::opcode_from_name("multiply"), OpCode::kMultiply);
  EXPECT_EQ(ir::opcode_from_name("multiplyy"), std::nullopt);
  EXPECT_EQ(ir::opcode_from_name(""), std::nullopt);
}

TEST(GraphPasses, PrintGraphNamesLabelsAndKinds) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix);
  GraphValueId called = maker.extern_call({a}, {kMatrix}, true)[0];
  maker.output(maker.reduction({maker.pointwise({a, called})}, {1}));
  const std::string text = ir::print_graph(maker.graph);
  for (const char* part : {"graph(v0)", "extern aten::mm(v0)", "side-effects", "pointwise aten::add(v0, v1)",
                           "reduction aten::sum.dim_IntList(v2)", "epilogue {%0=accumulator}", "return (v3)"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in\n" << text;
  }
}

}  // namespace
}  // namespace kiln::compiler
