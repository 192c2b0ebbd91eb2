// Registration table of embedding_bag and grid_sampler_2d (kernels in
// compiled/embedding_bag_ops.cc, compiled/grid_sampler_ops.cc).
// F.embedding_bag reaches _embedding_bag (autograd) or
// _embedding_bag_forward_only through the composite embedding_bag;
// autograd calls _embedding_bag_backward, which picks the dense backward.
#include <torch/library.h>

#include "kiln/aten/compiled/embedding_bag_ops.h"
#include "kiln/aten/compiled/grid_sampler_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_embedding_bag", TORCH_FN(compiled::_embedding_bag));
  m.impl("_embedding_bag_forward_only", TORCH_FN(compiled::_embedding_bag_forward_only));
  m.impl("_embedding_bag_backward", TORCH_FN(compiled::_embedding_bag_backward));
  m.impl("_embedding_bag_dense_backward", TORCH_FN(compiled::_embedding_bag_dense_backward));
  m.impl("_embedding_bag_per_sample_weights_backward",
         TORCH_FN(compiled::_embedding_bag_per_sample_weights_backward));
  m.impl("grid_sampler_2d", TORCH_FN(compiled::grid_sampler_2d));
  m.impl("grid_sampler_2d_backward", TORCH_FN(compiled::grid_sampler_2d_backward));
}

}  // namespace kiln::torch_integration
