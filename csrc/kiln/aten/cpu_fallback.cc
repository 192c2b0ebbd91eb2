#include "kiln/aten/cpu_fallback.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/native/CPUFallback.h>

#include <mutex>
#include <set>

#include "kiln/aten/library/library_threads.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/base/config.h"
#include "kiln/base/philox.h"
#include "kiln/c10/generator.h"

namespace kiln::torch_integration {
namespace {

// Ops already warned about; kept apart from op tracking so clearing the
// counters does not repeat the warnings.
bool first_warning_for(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string>* warned = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  return warned->insert(name).second;
}

bool is_generator_argument(const c10::Argument& argument) {
  const c10::TypePtr& type = argument.type();
  if (type->kind() == c10::TypeKind::GeneratorType) return true;
  if (auto optional = type->cast<c10::OptionalType>()) {
    return optional->getElementType()->kind() == c10::TypeKind::GeneratorType;
  }
  return false;
}

// The kiln device of the op: that of its first kiln tensor argument.
c10::DeviceIndex kiln_device_of(const torch::jit::Stack& stack, size_t first, size_t count) {
  for (size_t i = first; i < first + count; ++i) {
    const c10::IValue& value = stack[i];
    if (value.isTensor() && value.toTensor().defined() &&
        value.toTensor().device().is_privateuseone()) {
      return value.toTensor().device().index();
    }
  }
  return -1;
}

// A CPU generator whose seed is the next block of the kiln generator's stream.
at::Generator derived_cpu_generator(at::Generator kiln_generator) {
  auto* generator = kiln_generator.get<KilnGenerator>();
  uint64_t seed, offset;
  {
    std::lock_guard<std::mutex> lock(kiln_generator.mutex());
    seed = generator->current_seed();
    offset = generator->reserve_blocks(1);
  }
  PhiloxCounter block = philox_block(seed, offset);
  return at::detail::createCPUGenerator((static_cast<uint64_t>(block[0]) << 32) | block[1]);
}

void replace_generators(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& arguments = op.schema().arguments();
  size_t first = stack->size() - arguments.size();
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (!is_generator_argument(arguments[i])) continue;
    c10::IValue& value = (*stack)[first + i];
    if (value.isNone()) {
      c10::DeviceIndex device = kiln_device_of(*stack, first, arguments.size());
      value = derived_cpu_generator(default_generator(device));
    } else if (value.isGenerator() && value.toGenerator().device().is_privateuseone()) {
      value = derived_cpu_generator(value.toGenerator());
    }
  }
}

}  // namespace

std::string qualified_op_name(const c10::OperatorHandle& op) {
  const c10::OperatorName& name = op.operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  std::string name = qualified_op_name(op);
  FallbackMode mode = config().fallback_mode();
  TORCH_CHECK_NOT_IMPLEMENTED(
      mode != FallbackMode::kError, name,
      " is not lowered for the kiln device, and KILN_FALLBACK=error forbids running it on the "
      "CPU. Unset KILN_FALLBACK (or set it to warn) to let it fall back.");
  record_op(name, OpPath::kFallback);
  if (mode == FallbackMode::kWarn && first_warning_for(name)) {
    TORCH_WARN(name, " ran on the CPU: kiln has no kernel for it yet, so its inputs were copied "
               "to the host and its results back. Set KILN_FALLBACK=silent to hide this "
               "warning or KILN_FALLBACK=error to forbid fallbacks.");
  }
  replace_generators(op, stack);
  // An OpenMP team only on the initial thread (library_threads.h): the
  // autograd engine calls backward fallbacks from its kiln thread.
  library::LibraryThreadScope threads(/*small=*/false);
  at::native::cpu_fallback(op, stack, /*error_on_views=*/true);
}

void refuse_quantized(const c10::OperatorHandle& op, torch::jit::Stack* /*stack*/) {
  TORCH_CHECK_TYPE(false, "kiln does not support quantized dtypes (", qualified_op_name(op),
                   " was called with a quantized kiln tensor); keep quantized tensors on the CPU");
}

}  // namespace kiln::torch_integration
