// Builder: the way lowering code writes a Kernel.
//
// Part of the IR layer (below the torch line); aten/ lowering (eager ops and
// compiled programs' fused launches) uses it to make the Kernels of kernel.h.
//
//   Builder builder("add", KernelKind::kPointwise, rank);
//   ValueId x = builder.load(builder.add_input(DType::kFloat16, Layout::kContiguous));
//   ValueId y = builder.load(builder.add_input(DType::kFloat32, Layout::kBroadcast));
//   ValueId sum = builder.binary(OpCode::kAdd, builder.cast(x, DType::kFloat32), y);
//   builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous), sum);
//   Kernel kernel = builder.finish();
//
// Loads convert half types to float32 (dtype.h); cast() inserts conversions.
// The builder sets each node's dtype from its operands but checks neither
// arities nor dtypes, and finish() does not verify: call verify()
// (verifier.h) on the result.
//
// Ownership: the Builder owns the Kernel it writes; finish() moves it out,
// after which the builder is spent (use a new one). Thread-safety: one
// thread at a time; no locks.
//
// Errors: an input, output, scalar or stage index out of range (and
// accumulator() before reduce()) throws std::out_of_range from
// std::vector::at, the one exception in this layer; ValueId arguments are
// not checked (dtype_of() and the node helpers index with them directly).
#pragma once

#include <string>

#include "kiln/ir/kernel.h"

namespace kiln::ir {

class Builder {
 public:
  Builder(std::string name, KernelKind kind, int rank);

  // Each returns the new operand's or scalar's index, counted from 0.
  int add_input(DType dtype, Layout layout);
  int add_output(DType dtype, Layout layout);
  int add_scalar(DType dtype);  // f64, i64 or bool

  ValueId load(int input);
  ValueId indexed_load(int input, ValueId element_offset);
  ValueId scalar(int slot);
  ValueId constant(double value, DType dtype);
  ValueId coordinate(int dim);
  ValueId linear_index();
  ValueId random_bits(int word);
  ValueId accumulator();
  // Row kernels: the result of stage `stage` (added by reduce_stage).
  ValueId stage_result(int stage);
  ValueId accumulator_index();

  ValueId unary(OpCode op, ValueId x);
  ValueId binary(OpCode op, ValueId a, ValueId b);
  ValueId select(ValueId condition, ValueId if_true, ValueId if_false);
  // Converts `x` to `dtype`; for float16/bfloat16 the value is rounded to that
  // precision and stays float32. Returns `x` when nothing changes.
  ValueId cast(ValueId x, DType dtype);

  DType dtype_of(ValueId value) const { return kernel_.nodes[value].dtype; }

  // Appends `node` as it is, dtype included; its args must already name this
  // builder's values. For fusing kernels: a node moves from one kernel into
  // another unchanged, so an integer constant keeps all 64 bits.
  ValueId copy_node(const Node& node) { return add_node(node); }

  void store(int output, ValueId value);
  // Stores `value` at the current position plus `element_offset` (int64) of
  // `output`, adding to the element there when `accumulate`. Makes the kernel
  // single-threaded: several positions may address one element.
  void store_indexed(int output, ValueId value, ValueId element_offset, bool accumulate);
  // Reductions: folds `value` with `op`; the epilogue reads the result through
  // accumulator(). `kept_rank` dims are kept; `inner` as in Reduction.
  void reduce(ReduceOp op, ValueId value, int kept_rank, bool inner);
  // Row kernels: sets the kept dims (the rest form the row).
  void set_kept_rank(int kept_rank);
  // Row kernels: folds `value` over the row after the stages added before;
  // returns the stage's index.
  int reduce_stage(ReduceOp op, ValueId value);

  // Moves the kernel out; see the top.
  Kernel finish();

 private:
  ValueId add_node(Node node);
  Kernel kernel_;
};

}  // namespace kiln::ir
