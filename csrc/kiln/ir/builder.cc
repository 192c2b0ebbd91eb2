#include "kiln/ir/builder.h"

#include <utility>

namespace kiln::ir {

Builder::Builder(std::string name, KernelKind kind, int rank) {
  kernel_.name = std::move(name);
  kernel_.kind = kind;
  kernel_.rank = rank;
}

int Builder::add_input(DType dtype, Layout layout) {
  kernel_.inputs.push_back({dtype, layout});
  return static_cast<int>(kernel_.inputs.size()) - 1;
}

int Builder::add_output(DType dtype, Layout layout) {
  kernel_.outputs.push_back({dtype, layout});
  kernel_.results.push_back(kNoValue);
  kernel_.store_offsets.push_back(kNoValue);
  kernel_.store_accumulates.push_back(false);
  return static_cast<int>(kernel_.outputs.size()) - 1;
}

int Builder::add_scalar(DType dtype) {
  kernel_.scalars.push_back(dtype);
  return static_cast<int>(kernel_.scalars.size()) - 1;
}

ValueId Builder::add_node(Node node) {
  kernel_.nodes.push_back(node);
  return static_cast<ValueId>(kernel_.nodes.size()) - 1;
}

ValueId Builder::load(int input) {
  Node node;
  node.op = OpCode::kLoad;
  node.dtype = compute_dtype(kernel_.inputs.at(input).dtype);
  node.integer = input;
  return add_node(node);
}

ValueId Builder::indexed_load(int input, ValueId element_offset) {
  Node node;
  node.op = OpCode::kIndexedLoad;
  node.dtype = compute_dtype(kernel_.inputs.at(input).dtype);
  node.integer = input;
  node.args[0] = element_offset;
  return add_node(node);
}

ValueId Builder::scalar(int slot) {
  Node node;
  node.op = OpCode::kScalar;
  node.dtype = kernel_.scalars.at(slot);
  node.integer = slot;
  return add_node(node);
}

ValueId Builder::constant(double value, DType dtype) {
  Node node;
  node.op = OpCode::kConstant;
  node.dtype = compute_dtype(dtype);
  if (is_integer(dtype)) {
    node.integer = static_cast<int64_t>(value);
  } else {
    node.real = dtype == DType::kBool ? (value != 0.0 ? 1.0 : 0.0) : value;
  }
  return add_node(node);
}

ValueId Builder::coordinate(int dim) {
  Node node;
  node.op = OpCode::kCoordinate;
  node.dtype = DType::kInt64;
  node.integer = dim;
  return add_node(node);
}

ValueId Builder::linear_index() {
  Node node;
  node.op = OpCode::kLinearIndex;
  node.dtype = DType::kInt64;
  return add_node(node);
}

ValueId Builder::random_bits(int word) {
  Node node;
  node.op = OpCode::kRandomBits;
  node.dtype = DType::kInt64;
  node.integer = word;
  return add_node(node);
}

ValueId Builder::accumulator() {
  Node node;
  node.op = OpCode::kAccumulator;
  node.dtype = reduce_accumulator_dtype(kernel_.reduction.op,
                                        kernel_.nodes.at(kernel_.reduction.input).dtype);
  return add_node(node);
}

ValueId Builder::stage_result(int stage) {
  const Reduction& reduction = kernel_.stages.at(stage);
  Node node;
  node.op = OpCode::kAccumulator;
  node.dtype = reduce_accumulator_dtype(reduction.op, kernel_.nodes.at(reduction.input).dtype);
  node.integer = stage;
  return add_node(node);
}

ValueId Builder::accumulator_index() {
  Node node;
  node.op = OpCode::kAccumulatorIndex;
  node.dtype = DType::kInt64;
  return add_node(node);
}

ValueId Builder::unary(OpCode op, ValueId x) {
  Node node;
  node.op = op;
  node.dtype = opcode_class(op) == OpClass::kUnaryPredicate ? DType::kBool : dtype_of(x);
  node.args[0] = x;
  return add_node(node);
}

ValueId Builder::binary(OpCode op, ValueId a, ValueId b) {
  Node node;
  node.op = op;
  node.dtype = opcode_class(op) == OpClass::kComparison ? DType::kBool : dtype_of(a);
  node.args[0] = a;
  node.args[1] = b;
  return add_node(node);
}

ValueId Builder::select(ValueId condition, ValueId if_true, ValueId if_false) {
  Node node;
  node.op = OpCode::kSelect;
  node.dtype = dtype_of(if_true);
  node.args[0] = condition;
  node.args[1] = if_true;
  node.args[2] = if_false;
  return add_node(node);
}

ValueId Builder::cast(ValueId x, DType dtype) {
  DType target = compute_dtype(dtype);
  bool rounds = target != dtype;
  if (!rounds && dtype_of(x) == target) return x;
  Node node;
  node.op = OpCode::kCast;
  node.dtype = target;
  node.args[0] = x;
  node.integer = static_cast<int64_t>(dtype);
  return add_node(node);
}

void Builder::store(int output, ValueId value) { kernel_.results.at(output) = value; }

void Builder::store_indexed(int output, ValueId value, ValueId element_offset, bool accumulate) {
  kernel_.results.at(output) = value;
  kernel_.store_offsets.at(output) = element_offset;
  kernel_.store_accumulates.at(output) = accumulate;
  kernel_.single_threaded = true;
}

void Builder::reduce(ReduceOp op, ValueId value, int kept_rank, bool inner) {
  kernel_.reduction.op = op;
  kernel_.reduction.input = value;
  kernel_.reduction.inner = inner;
  kernel_.kept_rank = kept_rank;
}

void Builder::set_kept_rank(int kept_rank) { kernel_.kept_rank = kept_rank; }

int Builder::reduce_stage(ReduceOp op, ValueId value) {
  kernel_.stages.push_back({op, value, true});
  return static_cast<int>(kernel_.stages.size()) - 1;
}

Kernel Builder::finish() { return std::move(kernel_); }

}  // namespace kiln::ir
