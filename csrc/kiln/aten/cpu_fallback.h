// The boxed CPU fallback for every ATen op Kiln has no kernel for.
//
// The op's kiln inputs are copied to the host, the CPU kernel runs, and the
// results are copied back (ATen's at::native::cpu_fallback). Around that:
//   - op tracking counts the op under "fallback";
//   - KILN_FALLBACK=warn (default) warns once per op, silent does not, error
//     raises NotImplementedError naming the op before anything is touched;
//   - a Generator argument that is None or a kiln generator is replaced by a
//     CPU generator seeded from the kiln generator's Philox stream, so
//     torch.kiln.manual_seed controls random ops that fall back too;
//   - a view op that reaches the fallback is an error, since a copy would
//     silently break aliasing.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace kiln::torch_integration {

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Raises TypeError: the kiln device holds no quantized tensors.
void refuse_quantized(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// "aten::add.Tensor" for an op handle.
std::string qualified_op_name(const c10::OperatorHandle& op);

}  // namespace kiln::torch_integration
