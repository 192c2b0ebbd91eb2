#include "kiln/aten/compiled/launch/dtype_sets.h"

#include <c10/util/Exception.h>

namespace kiln::torch_integration::compiled {

void check_dispatch_dtype(const char* name, c10::ScalarType type, DTypeSet allowed) {
  TORCH_CHECK_NOT_IMPLEMENTED(allowed.contains(type), '"', name, "\" not implemented for '",
                              c10::toString(type), "'");
}

}  // namespace kiln::torch_integration::compiled
