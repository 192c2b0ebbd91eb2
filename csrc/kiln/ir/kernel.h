// Kernel: one unit of generated code, in Kiln IR.
//
// The centre of the IR layer (below the torch line): lowering (aten/) builds
// Kernels with builder.h, printer.h names them, and compiler/codegen checks
// them with verifier.h and turns them into C for the kernel cache.
//
// Ownership and threads: Node, Operand, FixedShape, Reduction and Kernel are
// plain values that own all their data (no pointers; a ValueId is an index
// into Kernel::nodes). Copy or move them freely; a Kernel no thread writes
// may be read from any number of threads; nothing here locks.
//
// A kernel iterates over an index space of `rank` dims. Dim 0 is the innermost
// (fastest-moving), as in PyTorch's TensorIterator. Sizes, strides and scalar
// values are launch arguments, not part of the kernel, so one compiled kernel
// serves every shape: what the kernel fixes is its op, dtypes, rank and the
// layout class of each operand along dim 0. A kernel may instead be
// specialised to one shape (`fixed_shape`): compiled programs, whose shapes
// are static, get loops with constant trip counts and strides, which the C
// compiler vectorises where a runtime stride defeats it.
//
// Pointwise kernels compute every output element from the input elements at the
// same position (plus indexed loads). Reduction kernels split the dims into
// `kept_rank` kept dims (the output's, first) and `rank - kept_rank` reduced
// dims (last); the per-element expression is folded with `reduction.op`, then
// the epilogue (nodes reachable from `results`, built on kAccumulator) computes
// each output element.
//
// Row kernels (kRow) fold one row (the reduced dims, last) several times in
// turn, as a softmax or a layer norm does: `stages[s]` folds nodes[stages[s].input]
// over the row, and kAccumulator with `integer` s reads its result, in the
// values of later stages and in the results. A value that reads no tensor
// element (load or indexed load) is a row value, computed once per row; every
// other is an element value. An output broadcast along the row (stride 0 through the reduced
// dims) stores a row value once per row; the others store at every element.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/dtype.h"
#include "kiln/ir/ops.h"

namespace kiln::ir {

using ValueId = int32_t;
constexpr ValueId kNoValue = -1;
// Limits of the launch arguments (kernel_abi.h mirrors them).
constexpr int kMaxRank = 8;
constexpr int kMaxOperands = 16;
constexpr int kMaxScalars = 8;

struct Node {
  OpCode op = OpCode::kConstant;
  DType dtype = DType::kFloat32;
  ValueId args[3] = {kNoValue, kNoValue, kNoValue};
  int64_t integer = 0;  // operand index, scalar slot, dim, integer constant, ...
  double real = 0.0;    // floating and bool constants
};

// How an operand moves along the innermost iteration dim.
enum class Layout : char {
  kContiguous = 'c',  // stride 1
  kBroadcast = 'b',   // stride 0
  kStrided = 's',     // any other stride
};

struct Operand {
  DType dtype = DType::kFloat32;  // storage dtype
  Layout layout = Layout::kContiguous;
};

enum class KernelKind : uint8_t { kPointwise, kReduction, kRow };

// The one shape a specialised kernel runs on: `sizes[d]` of each dim and
// `strides[operand][d]` (inputs, then outputs), in elements. The launch
// arguments must carry the same sizes and strides.
struct FixedShape {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;
  bool empty() const { return sizes.empty(); }
};

enum class ReduceOp : uint8_t { kSum, kProduct, kMax, kMin, kArgMax, kArgMin, kAny, kAll };
// "sum", "argmax", ...: a static string; "unknown" outside the enum.
const char* reduce_op_name(ReduceOp op);

struct Reduction {
  ReduceOp op = ReduceOp::kSum;
  ValueId input = kNoValue;      // the per-element value folded
  // kInner: dim 0 is reduced (a row reduction, vectorised across lanes);
  // kOuter: dim 0 is kept (vectorised across neighbouring outputs).
  bool inner = true;
};

struct Kernel {
  std::string name;  // readable, e.g. "add"; not part of the semantics
  KernelKind kind = KernelKind::kPointwise;
  int rank = 1;
  int kept_rank = 0;  // reductions and row kernels
  std::vector<Operand> inputs;
  std::vector<Operand> outputs;
  std::vector<DType> scalars;  // f64, i64 or bool launch arguments
  std::vector<Node> nodes;
  // results, store_offsets and store_accumulates have one entry per output
  // (Builder::add_output keeps them so; verify() checks it, and print() and
  // codegen rely on it).
  std::vector<ValueId> results;  // outputs[i] stores nodes[results[i]]
  // Indexed stores (scatter, index_put, embedding backward): per output, an
  // int64 element offset added to the current position (kNoValue: none), and
  // whether the value is added to what is there instead of replacing it.
  std::vector<ValueId> store_offsets;
  std::vector<bool> store_accumulates;
  Reduction reduction;           // reductions only
  std::vector<Reduction> stages;  // row kernels only, in the order they run (all inner)
  // Set when two positions may store to one element (indexed stores): the
  // kernel then runs on one thread, in position order.
  bool single_threaded = false;
  FixedShape fixed_shape;        // empty: sizes and strides come with each launch
};

// The accumulator dtype of a reduction over `input` values: the input dtype,
// bool for any/all. (argmax/argmin indices are read through
// kAccumulatorIndex, which is int64; the accumulator itself keeps `input`.)
DType reduce_accumulator_dtype(ReduceOp op, DType input);

}  // namespace kiln::ir
