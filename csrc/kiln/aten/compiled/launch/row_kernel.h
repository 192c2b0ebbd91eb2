// Row kernels: compiled kernels written directly as C source (not Kiln IR)
// for ops that walk whole rows along one dim with data-dependent control flow
// that the IR cannot express: sorting, selection, searching, running scans.
//
// Every operand is viewed with the op's `dim` as its row; the operands share
// the other dims (the "outer" shape), and the kernel's iteration positions are
// the rows, so one launch sorts every row in parallel (launch_kernel splits
// the positions over threads). Sizes and strides are launch arguments: one
// kernel per (op, dtypes, compile-time options) serves every shape and layout.
//
// The C source a caller supplies is appended to row_kernel_prelude() and must
// define
//     static void kiln_row(const kiln_launch_args* args, char* const* rows,
//                          const int64_t* steps, const int64_t* lengths,
//                          void* scratch)
// which processes one row: rows[i] points at element 0 of operand i's row,
// steps[i] is its stride along the row and lengths[i] its length (elements).
// `scratch` is row_scratch_bytes of memory the caller may use freely (one
// block per thread, reused across rows). The op's parameters are in
// args->scalars[0..5].
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <functional>
#include <string>
#include <string_view>

namespace kiln::torch_integration::compiled {

// The C prelude of every row kernel: the generated-kernel prelude, the row
// walker and the entry point (which calls the caller's kiln_row).
std::string row_kernel_prelude();

// C typedefs and helpers for rows of `type`, named with `prefix`
// (e.g. "value"): <prefix>_t (storage), <prefix>_compute (arithmetic type:
// float for the half types, int for bool), <prefix>_load(storage) ->
// compute, <prefix>_store(compute) -> storage and <prefix>_is_nan(compute).
// Raises a TypeError naming `op_name` for types rows cannot hold (complex,
// float8, quantized).
std::string row_element_type(c10::ScalarType type, std::string_view prefix, const char* op_name);

// A short name of `type` for kernel signatures ("f32", "i64", ...).
const char* row_dtype_name(c10::ScalarType type);

struct RowLaunch {
  const char* op_name;              // "aten::sort.values_stable", for errors
  std::string_view signature;       // unique per generated source
  std::string_view kernel_name;     // readable, file-name safe ("sort_f32_descending")
  // The op's C source (see above); called only when the kernel is not cached.
  std::function<std::string()> source;
  int64_t dim = 0;                   // the row dim (wrapped) of every operand
  int inputs = 1;                    // operands [0, inputs) are read-only
  int64_t scalars[6] = {};           // args->scalars[0..5]
  int64_t scratch_bytes_per_element = 0;  // scratch: this times the longest row, plus
  int64_t scratch_bytes = 0;              // this
  int64_t cost_per_element = 1;      // for the threading decision
};

// Launches `launch` over the rows of `operands` (inputs first, then outputs)
// on the current stream. The operands must have the same sizes in every dim
// but `launch.dim`; 0-d operands are rows of one element. Outputs whose
// layout the launch arguments cannot express (more than six outer dims after
// merging) are computed in a contiguous buffer and copied back.
void launch_rows(const RowLaunch& launch, c10::ArrayRef<at::Tensor> operands);

}  // namespace kiln::torch_integration::compiled
