// Errors found by looking at device data: out-of-range indices, a source too
// small for masked_scatter.
//
// The CPU raises IndexError("index 7 is out of bounds for dimension 0 with
// size 5") before it writes anything. Knowing that on the device means reading
// the indices, and a synchronous read after every gather would stall the
// stream. Kiln does what CUDA does with its device-side assertions, without
// poisoning the device:
//   - a compiled reduction finds the worst offending index on the device;
//   - a small work item queued after it reads that one value and fails with
//     the CPU's message when there is one;
//   - when the stream was idle both run at once in the caller (the inline
//     launch path), so the op raises the CPU's exception type before it
//     launches its kernel, leaving its outputs untouched; otherwise the error
//     is raised (as RuntimeError) by the next synchronizing call (.cpu(),
//     .item(), torch.kiln.synchronize()), as CUDA reports an assertion, and
//     the stream stays usable.
// The indexing kernels themselves clamp every index into range, so a bad
// index never makes a kernel read or write outside its operands; what such a
// kernel leaves in its output is unspecified.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <string>

namespace kiln::torch_integration::compiled {

enum class ErrorType { kIndexError, kRuntimeError };

struct IndexBounds {
  int64_t size = 0;    // valid indices are [0, size) ...
  bool wraps = false;  // ... or [-size, size) when negative indices count from the end
};

// Checks every value of `index` (an integer kiln tensor) against `bounds`.
// `message` formats the error from one offending value.
void check_index_bounds(const char* op_name, const at::Tensor& index, IndexBounds bounds,
                        ErrorType type, std::function<std::string(int64_t)> message);

// The CPU's message for gather, scatter and advanced indexing.
std::function<std::string(int64_t)> out_of_bounds_message(int64_t dim, int64_t size,
                                                          std::string prefix = "");

// Reads the int64 device scalar `value` in stream order and raises
// `failure(value)` when that returns a message, under the same rules as
// check_index_bounds.
void check_device_value(const char* op_name, const at::Tensor& value, ErrorType type,
                        std::function<std::optional<std::string>(int64_t)> failure);

}  // namespace kiln::torch_integration::compiled
