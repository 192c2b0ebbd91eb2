// structured(): an ATen structured op's meta function (checks, allocation or
// out= resizing, see structured_outputs.h) followed by a kiln kernel, for the
// ops with a functional and an out= form that differ only in their output.
#pragma once

#include "kiln/aten/compiled/launch/structured_outputs.h"

namespace kiln::torch_integration::compiled {

// Runs Meta's checks and allocation (into `out` when given), then `kernel`.
template <typename Meta, typename Kernel, typename... Arguments>
at::Tensor structured(const at::Tensor* out, const Kernel& kernel, const Arguments&... arguments) {
  if (out != nullptr) {
    StructuredOutputs<Meta> meta({*out});
    meta.meta(arguments...);
    kernel(meta.output());
    return *out;
  }
  StructuredOutputs<Meta> meta;
  meta.meta(arguments...);
  kernel(meta.output());
  return meta.output();
}

}  // namespace kiln::torch_integration::compiled
