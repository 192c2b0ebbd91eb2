// Fusion: groups the nodes of a Graph into kernels, and orders the kernels and
// the extern calls into the steps of one program.
//
// A pointwise node joins the open kernel that produced one of its inputs when
// that kernel iterates over the node's output sizes; a reduction takes in the
// pointwise kernel that produced its input when nothing else reads that
// kernel's values (they then never reach memory); pointwise nodes that read
// only a reduction's results join it as its epilogue. A kernel closes as soon
// as anything outside it reads one of its values, and every open kernel closes
// at an extern call with side effects, so a kernel always runs before its
// readers and before any call that may mutate what it read: each kernel runs
// at the place of its last node.
//
// Row kernels: a reduction over the last dims of its input (a row) and the
// pointwise nodes around it form one row kernel when they read each other, as
// a softmax (maximum, exponentials, sum, division) or a layer norm (mean,
// variance, normalisation) do. A row kernel takes in the pointwise kernel that
// produced the row even when others read its values (it stores them), later
// reductions over the same rows as further stages, and pointwise nodes of the
// row's sizes that read its values, element by element (a row value, such as
// the maximum, broadcast along the row). Rows shorter than two elements, and
// fewer than kMinRowKernelRows rows of more than kSmallRowKernelElements
// elements in all, stay plain reductions (row_kernel_policy.h).
//
// Values computed inside a kernel and read only there are never stored. The
// fused expression of a kernel is one fragment (graph.h's dialect) over the
// kernel's inputs; its text, with the dtypes, identifies the generated code.
#pragma once

#include <string>
#include <vector>

#include "kiln/compiler/row_kernel_policy.h"
#include "kiln/ir/graph.h"

namespace kiln::compiler {

struct FusedKernel {
  ir::KernelKind kind = ir::KernelKind::kPointwise;
  std::vector<ir::GraphValueId> inputs;   // kLoad k reads inputs[k]
  std::vector<ir::GraphValueId> outputs;  // values stored
  // Pointwise: results[i] is the expression node stored to outputs[i].
  // Reduction: `expression` is the prologue, node `reduced_value` the value
  // folded; results[i] is the epilogue node stored to outputs[i].
  std::vector<ir::Node> expression;
  std::vector<ir::ValueId> results;
  ir::ValueId reduced_value = ir::kNoValue;
  ir::ReduceOp reduce_op = ir::ReduceOp::kSum;
  std::vector<int> reduced_dims;      // of the iteration sizes
  std::vector<ir::Node> epilogue;     // on kAccumulator
  std::vector<int64_t> iteration_sizes;  // pointwise: the outputs'; reduction, row: the reduced input's
  // Row kernels: `expression` holds every node, and kAccumulator with
  // `integer` s reads stage s, which folds node stage_values[s] with
  // stage_ops[s] over `reduced_dims`; results[i] is stored to outputs[i].
  std::vector<ir::ValueId> stage_values;
  std::vector<ir::ReduceOp> stage_ops;
  std::vector<int> nodes;             // graph nodes it computes, in order
};

struct ProgramStep {
  enum class Kind : uint8_t { kKernel, kExtern } kind = Kind::kKernel;
  int index = 0;  // into FusionResult::kernels, or the graph node of the extern call
};

struct FusionResult {
  std::vector<FusedKernel> kernels;
  std::vector<ProgramStep> steps;
};

// Fuses `graph` (which check_graph accepts). Every node ends up in exactly one
// kernel or extern step.
FusionResult fuse(const ir::Graph& graph);

// A readable listing of the kernels and steps, for KILN_DUMP_DIR.
std::string print_fusion(const ir::Graph& graph, const FusionResult& fusion);

}  // namespace kiln::compiler
