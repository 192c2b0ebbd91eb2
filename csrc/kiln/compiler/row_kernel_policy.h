// When a reduction over rows (its last dims) runs as one row kernel
// (ir::KernelKind::kRow) rather than as plain reductions: the graph
// compiler's fusion and the eager softmax, log_softmax and layer norm decide
// alike.
//
// A row kernel runs each row on one thread: fewer rows than kMinRowKernelRows
// leave too few to share between threads, and such a reduction stays a plain
// one, which splits long rows. Up to kSmallRowKernelElements elements run on
// one thread anyway (twice ATen's grain size, kernel_launch.cc). A row of one
// element has nothing to fold.
#pragma once

#include <cstdint>

namespace kiln::compiler {

constexpr int64_t kMinRowKernelRows = 32;
constexpr int64_t kSmallRowKernelElements = 65536;

constexpr bool suits_row_kernel(int64_t rows, int64_t row_elements) {
  return row_elements > 1 && (rows >= kMinRowKernelRows || rows * row_elements <= kSmallRowKernelElements);
}

}  // namespace kiln::compiler
