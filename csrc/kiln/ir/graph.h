// Graph: a whole forward or backward graph, as torch.compile hands it to Kiln.
//
// The graph compiler's input, in the IR layer (below the torch line): the
// bindings (python/program_bindings.cc) fill it from torch.compile's FX
// graph, and compiler/passes fuse and prune it. Every value is a tensor of
// static sizes and one dtype; every node is one of three kinds:
//
//   kPointwise  one output of the node's output sizes, each element computed
//               from the inputs' elements at the same position (inputs of
//               other sizes broadcast) by `expression`;
//   kReduction  folds input 0 over `reduced_dims` with `reduce_op`: `expression`
//               gives the value folded per element, `epilogue` the output
//               element from the accumulator;
//   kExtern     anything else (matmul, convolution, views, sorting, ...): an
//               opaque call the caller above the torch line makes. The graph
//               knows only which values it reads and writes, whether one of
//               its results aliases an input, and whether it has side effects.
//
// Expressions use the nodes of ops.h in a "fragment" dialect: kLoad `integer`
// k reads the node's inputs[k] (in its compute dtype); kAccumulator reads the
// reduction's accumulator; kCast converts to `dtype`, which may be float16 or
// bfloat16 (Builder::cast semantics: rounded, then float32); kConstant holds
// `real` or `integer` of `dtype`. The dtype of every other node follows from
// its operands, so it is not stored. The last node is the result.
//
// Ownership and threads: a Graph is a plain value that owns everything in it;
// ids are indices into `values` and `nodes`, and `call` an index into a table
// its caller keeps. The functions below are pure and safe from any thread.
// Errors come back as text (empty: none), never as exceptions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/kernel.h"

namespace kiln::ir {

using GraphValueId = int32_t;

struct TensorValue {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> sizes;
};

enum class GraphNodeKind : uint8_t { kPointwise, kReduction, kExtern };

struct GraphNode {
  GraphNodeKind kind = GraphNodeKind::kPointwise;
  std::string label;                  // e.g. "aten::add.Tensor": dumps and errors
  std::vector<GraphValueId> inputs;   // values read (kExtern: every tensor argument)
  std::vector<GraphValueId> outputs;  // values written; kNoValue for a result nobody reads
  std::vector<Node> expression;       // kPointwise and kReduction (fragment dialect)
  // kReduction only.
  ReduceOp reduce_op = ReduceOp::kSum;
  std::vector<int> reduced_dims;      // dims of inputs[0], ascending
  std::vector<Node> epilogue;         // on kAccumulator; last node is outputs[0]
  // kExtern only.
  bool aliases_input = false;         // a result is a view of an input
  bool has_side_effects = false;      // mutates an input: never removed or reordered
  int32_t call = -1;                  // the caller's index of the call it makes
};

struct Graph {
  std::vector<TensorValue> values;
  std::vector<GraphNode> nodes;       // in an order where producers come first
  std::vector<GraphValueId> inputs;   // values bound by the caller
  std::vector<GraphValueId> outputs;  // values handed back (may repeat)
};

// The opcode printed as `name` by opcode_name(), if any. Walks the enum: O(codes).
std::optional<OpCode> opcode_from_name(std::string_view name);

// Checks the structure: value ids in range, every value written once and
// before it is read, loads within the node's inputs, fragment operands before
// their users. Returns an empty string or the first problem found. Does not
// check dtypes, sizes or the order of reduced_dims.
std::string check_graph(const Graph& graph);

// A readable listing, one line per node, for KILN_DUMP_DIR and tests. Only
// for a graph check_graph() accepted: ids are not range-checked here.
std::string print_graph(const Graph& graph);
// One fragment as text ("%0 = load 0; %1 = exp %0; ..."); also the fragment's
// identity in kernel signatures, so it prints every field that matters.
std::string print_fragment(const std::vector<Node>& fragment);

}  // namespace kiln::ir
