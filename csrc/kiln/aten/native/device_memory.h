// Helpers for kernels that touch kiln device memory from the host.
#pragma once

#include <ATen/core/Tensor.h>

#include "kiln/runtime/stream.h"

namespace kiln::torch_integration {

// A CPU tensor aliasing the memory of kiln tensor `tensor` (same sizes, strides
// and offset). Valid only while `tensor` is alive and only inside work queued
// in stream order: on the host target device memory is host-addressable.
at::Tensor host_alias(const at::Tensor& tensor);

// The current stream of the device `tensor` lives on.
Stream& stream_of(const at::Tensor& tensor);

}  // namespace kiln::torch_integration
