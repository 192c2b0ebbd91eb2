// The compiled 2-D pooling ops' registration table (kernels in
// compiled/pooling_*.cc).
//
// max_pool2d, adaptive_avg_pool2d and the 1-D poolings are
// CompositeImplicitAutograd in ATen: on a non-CPU device max_pool2d calls
// max_pool2d_with_indices, and adaptive_avg_pool2d takes a mean for a 1x1
// output, else calls _adaptive_avg_pool2d; autograd's formulas call the
// backward ops below. The structured ops register their functional and out=
// overloads; _adaptive_avg_pool2d's out= overloads are CompositeExplicit
// wrappers of the functional ones, while adaptive_avg_pool2d.out is a CPU
// kernel of its own in ATen, so it is registered here too.
#include <torch/library.h>

#include "kiln/aten/compiled/pooling_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool2d_with_indices", TORCH_FN(compiled::max_pool2d_with_indices));
  m.impl("max_pool2d_with_indices.out", TORCH_FN(compiled::max_pool2d_with_indices_out));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(compiled::max_pool2d_with_indices_backward));
  m.impl("max_pool2d_with_indices_backward.grad_input",
         TORCH_FN(compiled::max_pool2d_with_indices_backward_out));

  m.impl("avg_pool2d", TORCH_FN(compiled::avg_pool2d));
  m.impl("avg_pool2d.out", TORCH_FN(compiled::avg_pool2d_out));
  m.impl("avg_pool2d_backward", TORCH_FN(compiled::avg_pool2d_backward));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN(compiled::avg_pool2d_backward_out));

  m.impl("_adaptive_avg_pool2d", TORCH_FN(compiled::adaptive_avg_pool2d));
  m.impl("adaptive_avg_pool2d.out", TORCH_FN(compiled::adaptive_avg_pool2d_out));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(compiled::adaptive_avg_pool2d_backward));
}

}  // namespace kiln::torch_integration
