// The compiled copy between two tensors on one kiln device: dtype
// conversion, any strides and broadcasting of the source, as ATen's copy_
// over a TensorIterator (so overlap between source and destination raises as
// on the CPU). Used by native/copy.cc for every within-device copy that is not
// a plain byte copy, and so by _to_copy, .to(dtype), clone and contiguous.
//
// Conversions are C's, as ATen's static_cast: float to integer truncates
// toward zero, anything to bool is `!= 0` (NaN is true), float16 and bfloat16
// round to nearest even (float64 and int64 through float32, as c10::Half and
// c10::BFloat16 convert).
#pragma once

#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

// Whether compiled kernels cover both dtypes (not complex, float8, uint16+).
bool copy_covers(const at::Tensor& source, const at::Tensor& destination);

// Queues destination[...] = source[...] on the destination's current stream.
// Both on the same kiln device; destination not resized.
void copy_on_device(const at::Tensor& source, const at::Tensor& destination);

}  // namespace kiln::torch_integration::compiled
