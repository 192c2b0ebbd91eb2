// The device rule every op family shares: all tensor arguments of an op are on
// one device. The message is PyTorch's own ("Expected all tensors to be on the
// same device, but found at least two devices, kiln:0 and cpu!"), so a user
// sees on kiln what they would see on CUDA.
//
// Synchronous host-side checks, callable from any thread; they read only the
// tensors' metadata, never device data.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <initializer_list>

namespace kiln::torch_integration {

// Raises the device-mismatch RuntimeError for `found` against `expected`.
// `op_name`, when given, is named at the end: "... kiln:0 and cpu! (in aten::mm)".
[[noreturn]] void raise_device_mismatch(c10::Device expected, c10::Device found,
                                        const char* op_name = nullptr);

// Raises unless `tensor` is on `expected`. Inline: it runs for every operand
// of every op, and the comparison is all a passing call costs.
inline void check_same_device(c10::Device expected, const at::Tensor& tensor,
                              const char* op_name = nullptr) {
  if (tensor.device() != expected) raise_device_mismatch(expected, tensor.device(), op_name);
}

// Raises unless every defined tensor of `tensors` is on the first defined
// one's device; undefined tensors (absent optional arguments) are skipped.
// Kiln kernels read raw pointers: a CPU tensor passed beside kiln ones must be
// refused before any kernel sees it.
void check_same_device(std::initializer_list<std::reference_wrapper<const at::Tensor>> tensors);

}  // namespace kiln::torch_integration
