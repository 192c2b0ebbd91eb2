#include "kiln/ir/verifier.h"

#include <algorithm>
#include <string>

namespace kiln::ir {
namespace {

bool is_half(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

// Leaves that read the current element: not allowed in a reduction epilogue.
bool reads_element(OpCode op) {
  return op == OpCode::kLoad || op == OpCode::kIndexedLoad || op == OpCode::kCoordinate ||
         op == OpCode::kLinearIndex || op == OpCode::kRandomBits;
}

bool is_accumulator(OpCode op) {
  return op == OpCode::kAccumulator || op == OpCode::kAccumulatorIndex;
}

class Verifier {
 public:
  explicit Verifier(const Kernel& kernel) : kernel_(kernel) {}

  Status run() {
    KILN_RETURN_IF_ERROR(check_signature());
    for (size_t index = 0; index < kernel_.nodes.size(); ++index) {
      KILN_RETURN_IF_ERROR(check_node(static_cast<ValueId>(index)));
    }
    for (size_t output = 0; output < kernel_.results.size(); ++output) {
      ValueId value = kernel_.results[output];
      if (!valid(value)) return fail("output " + std::to_string(output) + " is never stored");
      ValueId offset = kernel_.store_offsets[output];
      if (offset == kNoValue) {
        if (kernel_.store_accumulates[output]) return fail("an accumulating store needs an offset");
        continue;
      }
      if (!valid(offset) || kernel_.nodes[offset].dtype != DType::kInt64) {
        return fail("output " + std::to_string(output) + " has a store offset that is not int64");
      }
      if (kernel_.kind != KernelKind::kPointwise) return fail("indexed stores are pointwise only");
      if (!kernel_.single_threaded) return fail("indexed stores must be single-threaded");
    }
    if (kernel_.kind == KernelKind::kReduction) return check_reduction();
    if (kernel_.kind == KernelKind::kRow) return check_row();
    for (const Node& node : kernel_.nodes) {
      if (is_accumulator(node.op)) return fail("a pointwise kernel reads an accumulator");
    }
    return Status();
  }

 private:
  Status fail(const std::string& message) const {
    return invalid_argument("kernel '" + kernel_.name + "': " + message);
  }

  bool valid(ValueId value) const {
    return value >= 0 && value < static_cast<ValueId>(kernel_.nodes.size());
  }

  Status check_signature() const {
    if (kernel_.rank < 1 || kernel_.rank > kMaxRank) {
      return fail("rank " + std::to_string(kernel_.rank) + " is outside 1.." +
                  std::to_string(kMaxRank));
    }
    size_t operands = kernel_.inputs.size() + kernel_.outputs.size();
    if (operands > static_cast<size_t>(kMaxOperands)) {
      return fail(std::to_string(operands) + " tensor operands, at most " +
                  std::to_string(kMaxOperands));
    }
    if (kernel_.outputs.empty()) return fail("no outputs");
    if (kernel_.results.size() != kernel_.outputs.size() ||
        kernel_.store_offsets.size() != kernel_.outputs.size() ||
        kernel_.store_accumulates.size() != kernel_.outputs.size()) {
      return fail("results do not match outputs");
    }
    if (!kernel_.fixed_shape.empty()) {
      const FixedShape& fixed = kernel_.fixed_shape;
      if (fixed.sizes.size() != static_cast<size_t>(kernel_.rank) || fixed.strides.size() != operands) {
        return fail("the fixed shape needs a size per dim and strides per operand");
      }
      for (const std::vector<int64_t>& strides : fixed.strides) {
        if (strides.size() != fixed.sizes.size()) return fail("the fixed shape needs a stride per dim");
      }
      for (int64_t size : fixed.sizes) {
        if (size < 1) return fail("fixed sizes are positive");
      }
      // Layout classes describe the vectorised dim: dim 0, or a row
      // reduction's or row kernel's first reduced dim.
      const bool row_reduction =
          (kernel_.kind == KernelKind::kReduction && kernel_.reduction.inner) || kernel_.kind == KernelKind::kRow;
      const size_t vector_dim = row_reduction ? static_cast<size_t>(kernel_.kept_rank) : 0;
      for (size_t index = 0; index < operands && vector_dim < fixed.sizes.size() &&
                             fixed.sizes[vector_dim] > 1;
           ++index) {
        Layout layout = index < kernel_.inputs.size() ? kernel_.inputs[index].layout
                                                      : kernel_.outputs[index - kernel_.inputs.size()].layout;
        int64_t stride = fixed.strides[index][vector_dim];
        if ((layout == Layout::kContiguous && stride != 1) || (layout == Layout::kBroadcast && stride != 0)) {
          return fail("operand " + std::to_string(index) + "'s fixed stride " + std::to_string(stride) +
                      " contradicts its layout class");
        }
      }
    }
    if (kernel_.scalars.size() > static_cast<size_t>(kMaxScalars)) return fail("too many scalars");
    for (DType dtype : kernel_.scalars) {
      if (dtype != DType::kFloat64 && dtype != DType::kInt64 && dtype != DType::kBool) {
        return fail(std::string("scalar arguments are f64, i64 or bool, not ") + dtype_name(dtype));
      }
    }
    return Status();
  }

  Status check_node(ValueId id) const {
    const Node& node = kernel_.nodes[id];
    std::string where = "%" + std::to_string(id) + " (" + opcode_name(node.op) + ")";
    if (is_half(node.dtype)) return fail(where + " has a storage-only dtype");
    int arity = opcode_arity(node.op);
    for (int slot = 0; slot < 3; ++slot) {
      bool used = slot < arity;
      if (used && !(node.args[slot] >= 0 && node.args[slot] < id)) {
        return fail(where + " argument " + std::to_string(slot) + " is not an earlier value");
      }
      if (!used && node.args[slot] != kNoValue) return fail(where + " has an extra argument");
    }
    auto arg = [&](int slot) { return kernel_.nodes[node.args[slot]].dtype; };
    switch (opcode_class(node.op)) {
      case OpClass::kLeaf: return check_leaf(node, where);
      case OpClass::kUnary:
        if (arg(0) != node.dtype) return fail(where + " changes dtype");
        return check_domain(node, node.dtype, where);
      case OpClass::kUnaryPredicate:
        if (node.dtype != DType::kBool) return fail(where + " must yield bool");
        return Status();
      case OpClass::kBinary:
        if (arg(0) != node.dtype || arg(1) != node.dtype) {
          return fail(where + " mixes " + dtype_name(arg(0)) + " and " + dtype_name(arg(1)) +
                      " into " + dtype_name(node.dtype));
        }
        return check_domain(node, node.dtype, where);
      case OpClass::kComparison:
        if (arg(0) != arg(1)) return fail(where + " compares different dtypes");
        if (node.dtype != DType::kBool) return fail(where + " must yield bool");
        return Status();
      case OpClass::kSelect:
        if (arg(0) != DType::kBool) return fail(where + " condition is not bool");
        if (arg(1) != node.dtype || arg(2) != node.dtype) return fail(where + " branches differ");
        return Status();
      case OpClass::kCast: {
        auto target = static_cast<DType>(node.integer);
        if (node.integer < 0 || node.integer >= kDTypeCount || compute_dtype(target) != node.dtype) {
          return fail(where + " has an inconsistent target dtype");
        }
        return Status();
      }
    }
    return Status();
  }

  Status check_domain(const Node& node, DType dtype, const std::string& where) const {
    if (opcode_needs_floating(node.op) && !is_floating(dtype)) {
      return fail(where + " needs a floating dtype, got " + dtype_name(dtype));
    }
    if (opcode_needs_integral(node.op) && is_floating(dtype)) {
      return fail(where + " needs an integer or bool dtype, got " + dtype_name(dtype));
    }
    if (node.op == OpCode::kNegate && dtype == DType::kBool) return fail(where + " negates bool");
    return Status();
  }

  Status check_leaf(const Node& node, const std::string& where) const {
    switch (node.op) {
      case OpCode::kLoad:
      case OpCode::kIndexedLoad: {
        if (node.integer < 0 || node.integer >= static_cast<int64_t>(kernel_.inputs.size())) {
          return fail(where + " reads a missing input");
        }
        if (compute_dtype(kernel_.inputs[node.integer].dtype) != node.dtype) {
          return fail(where + " dtype differs from its input");
        }
        if (node.op == OpCode::kIndexedLoad && kernel_.nodes[node.args[0]].dtype != DType::kInt64) {
          return fail(where + " offset is not int64");
        }
        return Status();
      }
      case OpCode::kScalar:
        if (node.integer < 0 || node.integer >= static_cast<int64_t>(kernel_.scalars.size()) ||
            kernel_.scalars[node.integer] != node.dtype) {
          return fail(where + " reads a missing or mistyped scalar");
        }
        return Status();
      case OpCode::kCoordinate:
        if (node.integer < 0 || node.integer >= kernel_.rank) return fail(where + " dim out of range");
        return Status();
      case OpCode::kRandomBits:
        if (node.integer < 0 || node.integer > 3) return fail(where + " word is outside 0..3");
        return Status();
      default: return Status();
    }
  }

  // Marks the values `root` depends on (including itself) in `reached`.
  void reach(ValueId root, std::vector<bool>& reached) const {
    if (reached[root]) return;
    reached[root] = true;
    const Node& node = kernel_.nodes[root];
    for (int slot = 0; slot < opcode_arity(node.op); ++slot) reach(node.args[slot], reached);
  }

  Status check_reduction() const {
    const Reduction& reduction = kernel_.reduction;
    if (!valid(reduction.input)) return fail("the reduction has no input value");
    if (kernel_.kept_rank < 0 || kernel_.kept_rank >= kernel_.rank) {
      return fail("a reduction needs 0 <= kept_rank < rank");
    }
    if (!reduction.inner && kernel_.kept_rank == 0) return fail("an outer reduction keeps no dim");
    std::vector<bool> element(kernel_.nodes.size(), false);
    reach(reduction.input, element);
    std::vector<bool> epilogue(kernel_.nodes.size(), false);
    for (ValueId value : kernel_.results) reach(value, epilogue);
    bool has_index = reduction.op == ReduceOp::kArgMax || reduction.op == ReduceOp::kArgMin;
    DType accumulator = reduce_accumulator_dtype(reduction.op, kernel_.nodes[reduction.input].dtype);
    for (size_t index = 0; index < kernel_.nodes.size(); ++index) {
      const Node& node = kernel_.nodes[index];
      std::string where = "%" + std::to_string(index) + " (" + opcode_name(node.op) + ")";
      if (element[index] && is_accumulator(node.op)) {
        return fail(where + " reads the accumulator inside the reduced expression");
      }
      if (epilogue[index] && reads_element(node.op)) {
        return fail(where + " reads a tensor element in the reduction epilogue");
      }
      if (node.op == OpCode::kAccumulator && node.dtype != accumulator) {
        return fail(where + " has the wrong accumulator dtype");
      }
      if (node.op == OpCode::kAccumulatorIndex && !has_index) {
        return fail(where + " reads an index the reduction does not produce");
      }
    }
    if ((reduction.op == ReduceOp::kAny || reduction.op == ReduceOp::kAll) &&
        kernel_.nodes[reduction.input].dtype != DType::kBool) {
      return fail("any/all reduce bool values");
    }
    return Status();
  }

  // Row kernels: each stage folds values of the stages before it only; the
  // only tensor reads are plain loads (a row's elements have no linear
  // position or coordinates of their own in the kernel).
  Status check_row() const {
    if (kernel_.stages.empty()) return fail("a row kernel needs at least one stage");
    if (kernel_.kept_rank < 0 || kernel_.kept_rank >= kernel_.rank) {
      return fail("a row kernel needs 0 <= kept_rank < rank");
    }
    const int stage_count = static_cast<int>(kernel_.stages.size());
    for (int s = 0; s < stage_count; ++s) {
      if (!valid(kernel_.stages[s].input)) return fail("stage " + std::to_string(s) + " has no input value");
    }
    // after[i]: 1 + the last stage node i reads (0: none); element[i]: node
    // i reads a tensor element.
    std::vector<int> after(kernel_.nodes.size(), 0);
    std::vector<bool> element(kernel_.nodes.size(), false);
    for (size_t index = 0; index < kernel_.nodes.size(); ++index) {
      const Node& node = kernel_.nodes[index];
      std::string where = "%" + std::to_string(index) + " (" + opcode_name(node.op) + ")";
      const bool reads_tensor = node.op == OpCode::kLoad || node.op == OpCode::kIndexedLoad;
      if (reads_element(node.op) && !reads_tensor) return fail(where + " is not allowed in a row kernel");
      if (node.op == OpCode::kAccumulatorIndex) return fail(where + ": row kernels have no index results");
      if (node.op == OpCode::kAccumulator) {
        if (node.integer < 0 || node.integer >= stage_count) return fail(where + " reads a missing stage");
        const Reduction& stage = kernel_.stages[node.integer];
        if (node.dtype != reduce_accumulator_dtype(stage.op, kernel_.nodes[stage.input].dtype)) {
          return fail(where + " has the wrong accumulator dtype");
        }
        after[index] = static_cast<int>(node.integer) + 1;
      }
      element[index] = reads_tensor;
      for (int slot = 0; slot < opcode_arity(node.op); ++slot) {
        after[index] = std::max(after[index], after[node.args[slot]]);
        element[index] = element[index] || element[node.args[slot]];
      }
    }
    for (size_t output = 0; output < kernel_.outputs.size(); ++output) {
      if (element[kernel_.results[output]] && kernel_.outputs[output].layout == Layout::kBroadcast) {
        return fail("output " + std::to_string(output) + " stores element values but is broadcast along the row");
      }
    }
    for (int s = 0; s < stage_count; ++s) {
      const Reduction& stage = kernel_.stages[s];
      const std::string where = "stage " + std::to_string(s);
      if (!stage.inner) return fail(where + " is not a row reduction");
      if (stage.op == ReduceOp::kArgMax || stage.op == ReduceOp::kArgMin) return fail(where + ": no argmax/argmin");
      if (after[stage.input] > s) return fail(where + " reads its own or a later stage's result");
      if ((stage.op == ReduceOp::kAny || stage.op == ReduceOp::kAll) &&
          kernel_.nodes[stage.input].dtype != DType::kBool) {
        return fail(where + ": any/all reduce bool values");
      }
    }
    return Status();
  }

  const Kernel& kernel_;
};

}  // namespace

Status verify(const Kernel& kernel) { return Verifier(kernel).run(); }

}  // namespace kiln::ir
