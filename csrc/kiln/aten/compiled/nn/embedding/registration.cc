// The embedding family's registration table: embedding_bag. F.embedding_bag
// reaches _embedding_bag (autograd) or _embedding_bag_forward_only through the
// composite embedding_bag; autograd calls _embedding_bag_backward, which picks
// the dense backward.
#include <torch/library.h>

#include "kiln/aten/compiled/nn/embedding/embedding_bag_ops.h"

namespace kiln::torch_integration {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_embedding_bag", TORCH_FN(compiled::_embedding_bag));
  m.impl("_embedding_bag_forward_only", TORCH_FN(compiled::_embedding_bag_forward_only));
  m.impl("_embedding_bag_backward", TORCH_FN(compiled::_embedding_bag_backward));
  m.impl("_embedding_bag_dense_backward", TORCH_FN(compiled::_embedding_bag_dense_backward));
  m.impl("_embedding_bag_per_sample_weights_backward",
         TORCH_FN(compiled::_embedding_bag_per_sample_weights_backward));
}

}  // namespace kiln::torch_integration
