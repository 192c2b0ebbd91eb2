#include "kiln/ir/kernel.h"

namespace kiln::ir {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProduct: return "product";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kArgMax: return "argmax";
    case ReduceOp::kArgMin: return "argmin";
    case ReduceOp::kAny: return "any";
    case ReduceOp::kAll: return "all";
  }
  return "unknown";
}

DType reduce_accumulator_dtype(ReduceOp op, DType input) {
  if (op == ReduceOp::kAny || op == ReduceOp::kAll) return DType::kBool;
  return input;
}

}  // namespace kiln::ir
