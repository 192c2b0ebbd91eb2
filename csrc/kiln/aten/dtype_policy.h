// Which dtypes live on the kiln device, and as what.
//
// Quantized dtypes are refused with a TypeError naming the dtype. float64 is
// stored as float64 under KILN_FLOAT64=native (the default) and as float32
// under KILN_FLOAT64=float32, TorchNeuron's policy, with a one-time warning.
#pragma once

#include <c10/core/ScalarType.h>

namespace kiln::torch_integration {

// The dtype a kiln tensor requested as `requested` is stored in. Throws for a
// dtype the device refuses.
c10::ScalarType device_dtype(c10::ScalarType requested);

}  // namespace kiln::torch_integration
