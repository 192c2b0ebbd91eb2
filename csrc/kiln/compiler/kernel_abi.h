// The calling convention of every generated kernel.
//
//   void <entry>(const kiln_launch_args* args, int64_t begin, int64_t end);
//
// runs the kernel on iteration positions [begin, end): elements of the
// iteration space for pointwise kernels, output elements for reductions. The
// launcher may split [0, total) over threads and call the entry on each piece.
// Pointers are to element 0 of each operand (inputs first, then outputs);
// strides are in elements, per iteration dim (dim 0 innermost). The generated C
// prelude declares the same struct (codegen/prelude.cc), with a static
// assertion on its size so the two cannot drift apart.
#pragma once

#include <cstdint>

#include "kiln/ir/kernel.h"

namespace kiln {

union LaunchScalar {
  double real;
  int64_t integer;
};

struct LaunchArgs {
  char* data[ir::kMaxOperands];
  int64_t sizes[ir::kMaxRank];
  int64_t strides[ir::kMaxOperands][ir::kMaxRank];
  LaunchScalar scalars[ir::kMaxScalars];
  uint64_t seed;
  uint64_t offset;
};
static_assert(sizeof(LaunchArgs) == 8 * (16 + 8 + 16 * 8 + 8 + 2), "the C prelude assumes this layout");

using KernelEntry = void (*)(const LaunchArgs* args, int64_t begin, int64_t end);

}  // namespace kiln
