// The complex pointwise family's registration table. add, sub, mul, div,
// neg, sgn, reciprocal and abs of complex tensors branch from their real
// kernels (compiled/binary_ops.cc, unary_ops.cc into complex_ops.cc); ops
// that exist only for complex results are registered here.
#include <torch/library.h>

#include "kiln/aten/compiled/polar_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("polar.out", TORCH_FN(compiled::polar_out));
}

}  // namespace kiln::torch_integration
