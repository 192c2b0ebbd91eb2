// C spellings for generated kernels: the C types of Kiln IR dtypes, literals
// and conversions, and the statements that fold a reduction's elements. Used
// by the kernel emitter (c_source.cc).
#pragma once

#include <optional>
#include <string>

#include "kiln/ir/dtype.h"
#include "kiln/ir/kernel.h"

namespace kiln::codegen {

// The C type a value of `dtype` is computed in (_Bool, int32_t, float, ...).
const char* compute_type(ir::DType dtype);
// The C type an element of `dtype` is stored as (float16 and bfloat16 as bits).
const char* storage_type(ir::DType dtype);
// The helper-name suffix of a compute dtype, e.g. kiln_floordiv_i32.
const char* helper_suffix(ir::DType dtype);
// The suffix of C's float math builtins: expf for float, exp for double.
const char* math_suffix(ir::DType dtype);
// The unsigned type with the width of an integer dtype, for wrapping
// arithmetic; null for narrower types (they promote to int).
const char* unsigned_type(ir::DType dtype);
// The C name of IR value `id`.
std::string value(ir::ValueId id);
// `number` as a C literal of `dtype` (NaN and infinities as builtins).
std::string real_literal(double number, ir::DType dtype);
// C text of `text`, of dtype `from`, converted to `to`.
std::string convert(const std::string& text, ir::DType from, ir::DType to);

// The identity of `op` over `dtype` as a C literal.
std::string reduce_identity(ir::ReduceOp op, ir::DType dtype);
// `accumulator = accumulator (op) element` as a C statement.
std::string reduce_step(ir::ReduceOp op, ir::DType dtype, const std::string& accumulator,
                        const std::string& element);
// Whether `element` should replace the best value so far of an
// argmax/argmin: strictly better, or the first NaN.
std::string arg_better(ir::ReduceOp op, ir::DType dtype, const std::string& element,
                       const std::string& best, const std::string& best_index);

// A row reduction's fold done with explicit vectors (prelude.cc): the
// vector type, its lane count, the fold of two vectors lane by lane and the
// fold of one vector's lanes into a scalar.
struct VectorFold {
  const char* type;
  int width;
  const char* function;
  const char* horizontal;
};

// Floating sum, product, max and min fold in explicit vectors: the C compiler
// does not vectorise the NaN-propagating selects of max and min, and folds
// the lanes of a short row's sum one scalar at a time. Others fold in scalar
// lanes the compiler vectorises itself.
std::optional<VectorFold> vector_fold_of(ir::ReduceOp op, ir::DType accumulator);

}  // namespace kiln::codegen
