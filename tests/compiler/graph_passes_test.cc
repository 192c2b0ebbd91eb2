// Tests of the graph passes of the compiled path: check_graph and friends
// (ir/graph.h), dead code elimination and fusion. Every fusion result is also
// run through check_fusion (graph_passes_support.h), which simulates the
// program's steps and compares what each kernel stores with what the graph
// computes.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "graph_passes_support.h"
#include "kiln/compiler/passes/dead_code.h"

namespace kiln::compiler::fusion_testing {
namespace {


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

TEST(GraphPasses, IndependentKernelsJoinedByOneNodeMergeIntoOne) {
  // As (a > b) | isnan(a): two open kernels of one shape, then their join.
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix), b = maker.input(kMatrix);
  GraphValueId greater = maker.pointwise({a, b}, OpCode::kGreater);
  GraphValueId other = maker.pointwise({a, a}, OpCode::kMultiply);
  GraphValueId joined = maker.pointwise({greater, other});
  maker.output(joined);
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 1u) << print_fusion(maker.graph, fusion);
  EXPECT_EQ(fusion.kernels[0].nodes, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(fusion.kernels[0].inputs, (Values{a, b}));
  EXPECT_EQ(fusion.kernels[0].outputs, (Values{joined}));
}

TEST(GraphPasses, KernelReadByACallDoesNotMerge) {
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix), b = maker.input(kMatrix);
  GraphValueId first = maker.pointwise({a, b});
  GraphValueId second = maker.pointwise({a, a}, OpCode::kMultiply);
  GraphValueId called = maker.extern_call({first}, {kMatrix})[0];  // reads first: its kernel is closed
  GraphValueId joined = maker.pointwise({first, second, called});
  maker.output(joined);
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 2u) << print_fusion(maker.graph, fusion);
  EXPECT_EQ(fusion.kernels[0].nodes, (std::vector<int>{0}));
  EXPECT_EQ(fusion.kernels[1].nodes, (std::vector<int>{1, 3}));
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

TEST(GraphPasses, ChainValueReadElsewhereJoinsARowKernel) {
  // The reduction takes in the chain although another node reads it: the row
  // kernel stores the chain's value for that reader, which joins it too.
  GraphMaker maker;
  GraphValueId a = maker.input(kMatrix), b = maker.input(kMatrix);
  GraphValueId chain = maker.pointwise({maker.pointwise({a, b}), a}, OpCode::kMultiply);
  GraphValueId sum = maker.reduction({chain}, {1});
  maker.output(sum);
  GraphValueId reader = maker.pointwise({chain, b});
  maker.output(reader);
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 1u) << print_fusion(maker.graph, fusion);
  EXPECT_EQ(fusion.kernels[0].kind, ir::KernelKind::kRow);
  EXPECT_EQ(fusion.kernels[0].outputs, (Values{sum, reader}));
  EXPECT_EQ(fusion.kernels[0].stage_ops, (std::vector<ir::ReduceOp>{ir::ReduceOp::kSum}));
}

TEST(GraphPasses, FewLongRowsKeepTheReductionSeparate) {
  // 4 rows of 20000: too few rows to share between threads, and too many
  // elements for one: the plain reduction (which splits long rows) stays.
  const Sizes sizes = {4, 20000};
  GraphMaker maker;
  GraphValueId a = maker.input(sizes), b = maker.input(sizes);
  GraphValueId chain = maker.pointwise({maker.pointwise({a, b}), a}, OpCode::kMultiply);
  GraphValueId sum = maker.reduction({chain}, {1});
  maker.output(sum);
  maker.output(maker.pointwise({chain, b}));
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 3u) << print_fusion(maker.graph, fusion);
  EXPECT_EQ(fusion.kernels[0].outputs, (Values{chain}));
  EXPECT_EQ(fusion.kernels[1].kind, ir::KernelKind::kReduction);
  EXPECT_EQ(fusion.kernels[1].nodes, (std::vector<int>{2}));
}

TEST(GraphPasses, SoftmaxBecomesOneRowKernelOfTwoStages) {
  // max over the row, exp(x - max), its sum, then the division: every value
  // but the result stays in the kernel.
  GraphMaker maker;
  GraphValueId x = maker.input(kMatrix);
  GraphValueId maximum = maker.reduction({x}, {1});
  maker.graph.nodes.back().reduce_op = ir::ReduceOp::kMax;
  GraphValueId shifted = maker.pointwise({x, maximum}, OpCode::kSubtract);
  GraphValueId exponential = maker.pointwise({shifted});
  maker.graph.nodes.back().expression = {leaf(OpCode::kLoad), apply(OpCode::kExp, 0)};
  GraphValueId sum = maker.reduction({exponential}, {1});
  GraphValueId result = maker.pointwise({exponential, sum}, OpCode::kDivide);
  maker.output(result);
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 1u) << print_fusion(maker.graph, fusion);
  const FusedKernel& kernel = fusion.kernels[0];
  EXPECT_EQ(kernel.kind, ir::KernelKind::kRow);
  EXPECT_EQ(kernel.inputs, (Values{x}));
  EXPECT_EQ(kernel.outputs, (Values{result}));
  EXPECT_EQ(kernel.stage_ops, (std::vector<ir::ReduceOp>{ir::ReduceOp::kMax, ir::ReduceOp::kSum}));
  EXPECT_EQ(kernel.reduced_dims, (std::vector<int>{1}));
}

TEST(GraphPasses, ReductionOverLeadingDimsIsNoRow) {
  // Rows are the last dims: a sum over dim 0 stays a plain reduction, and a
  // node broadcasting its result over the input is a kernel of its own.
  GraphMaker maker;
  GraphValueId x = maker.input(kMatrix);
  GraphValueId sum = maker.reduction({x}, {0});
  GraphValueId centred = maker.pointwise({x, sum}, OpCode::kSubtract);
  maker.output(centred);
  FusionResult fusion = checked_fuse(maker.graph);
  ASSERT_EQ(fusion.kernels.size(), 2u) << print_fusion(maker.graph, fusion);
  EXPECT_EQ(fusion.kernels[0].kind, ir::KernelKind::kReduction);
  EXPECT_EQ(fusion.kernels[1].kind, ir::KernelKind::kPointwise);
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
  size_t fused_nodes = 0, reduction_kernels = 0, row_kernels = 0, dead_nodes = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    ir::Graph graph = random_graph(generator, trial % 3 == 2);
    SCOPED_TRACE("trial " + std::to_string(trial));
    FusionResult fusion = checked_fuse(graph);
    for (const FusedKernel& kernel : fusion.kernels) {
      fused_nodes += kernel.nodes.size() - 1;
      reduction_kernels += kernel.kind == ir::KernelKind::kReduction && kernel.nodes.size() > 1;
      row_kernels += kernel.kind == ir::KernelKind::kRow;
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
  EXPECT_GT(row_kernels, 100u);
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
}  // namespace kiln::compiler::fusion_testing
