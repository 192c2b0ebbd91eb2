// The boxed library kernel of library_call.h: an op's CPU kernel on aliases of
// kiln memory, queued on the stream or run at a sync point.
#include "kiln/aten/library/library_call.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kiln/aten/cpu_fallback.h"
#include "kiln/aten/device_checks.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/library/batch_split.h"
#include "kiln/aten/library/library_threads.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/device_allocator.h"
#include "kiln/c10/device_guard.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration::library {
namespace {

using Arguments = std::vector<c10::IValue>;

// Calls `visit` on every defined tensor in `value` (a tensor or a list of them).
template <typename Visit>
void for_each_tensor(const c10::IValue& value, const Visit& visit) {
  if (value.isTensor()) {
    if (value.toTensor().defined()) visit(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& tensor : value.toTensorList()) {
      if (tensor.defined()) visit(tensor);
    }
  }
}

// `value` with `convert` applied to every defined tensor in it.
template <typename Convert>
c10::IValue map_tensors(const c10::IValue& value, const Convert& convert) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    return tensor.defined() ? c10::IValue(convert(tensor)) : value;
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> converted;
    for (const at::Tensor& tensor : value.toTensorList()) {
      converted.push_back(tensor.defined() ? convert(tensor) : tensor);
    }
    return converted;
  }
  return value;
}

// A CPU tensor on the same memory, with the lazy conjugate and negative bits
// of `tensor`: the CPU kernel resolves them as it would for a CPU view.
at::Tensor host_view(const at::Tensor& tensor) {
  at::Tensor alias = host_alias(tensor);
  if (tensor.is_conj()) alias = alias.conj();
  if (tensor.is_neg()) alias = at::_neg_view(alias);
  return alias;
}

at::Tensor meta_view(const at::Tensor& tensor) {
  at::Tensor meta = at::empty_strided(tensor.sizes(), tensor.strides(),
                                      tensor.options().device(c10::kMeta));
  if (tensor.is_conj()) meta = meta.conj();
  if (tensor.is_neg()) meta = at::_neg_view(meta);
  return meta;
}

torch::jit::Stack host_stack(const Arguments& arguments) {
  torch::jit::Stack stack;
  stack.reserve(arguments.size());
  for (const c10::IValue& value : arguments) stack.push_back(map_tensors(value, host_view));
  return stack;
}

bool is_out_argument(const c10::Argument& argument) {
  return argument.is_out();
}

// For each return of the op, the index of the argument it is (an out= or
// in-place argument the op writes), or -1 for a new tensor.
std::vector<int> aliased_arguments(const c10::FunctionSchema& schema) {
  std::vector<int> aliased;
  for (const c10::Argument& result : schema.returns()) {
    TORCH_INTERNAL_ASSERT(result.type()->kind() == c10::TypeKind::TensorType,
                          "the library path returns tensors only: ", schema);
    int index = -1;
    for (size_t i = 0; i < schema.arguments().size() && result.alias_info(); ++i) {
      const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
      if (alias && alias->isWrite() && alias->beforeSets() == result.alias_info()->beforeSets()) {
        index = static_cast<int>(i);
      }
    }
    aliased.push_back(index);
  }
  return aliased;
}

// The kiln device of the call. Every tensor must be on it: the CPU kernel
// would otherwise accept a CPU tensor that CUDA's would refuse.
c10::Device call_device(const Arguments& arguments, const std::string& name) {
  std::optional<c10::Device> device;
  for (const c10::IValue& value : arguments) {
    for_each_tensor(value, [&](const at::Tensor& tensor) {
      if (!device) device = tensor.device();
      check_same_device(*device, tensor, name.c_str());
    });
  }
  TORCH_INTERNAL_ASSERT(device && device->is_privateuseone(), name, " reached kiln without a "
                        "kiln tensor");
  return *device;
}

// Runs the op's Meta kernel on meta stand-ins of the arguments (out= ones
// empty, so the kernel chooses their sizes and strides). Returns the meta
// results, or nothing when the op has no Meta kernel or it raised: the CPU
// kernel then runs at the call and raises its own error.
std::optional<std::vector<at::Tensor>> meta_results(const c10::OperatorHandle& op,
                                                    const Arguments& arguments) {
  if (!op.hasComputedKernelForDispatchKey(c10::DispatchKey::Meta)) return std::nullopt;
  const auto& schema = op.schema();
  torch::jit::Stack stack;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (is_out_argument(schema.arguments()[i]) && arguments[i].isTensor()) {
      stack.push_back(at::empty({0}, arguments[i].toTensor().options().device(c10::kMeta)));
    } else {
      stack.push_back(map_tensors(arguments[i], meta_view));
    }
  }
  try {
    op.callBoxed(&stack);
  } catch (const std::exception&) {  // c10::Error, or a Python Meta kernel's error
    return std::nullopt;
  }
  std::vector<at::Tensor> results;
  for (const c10::IValue& value : stack) results.push_back(value.toTensor());
  return results;
}

// Resizes the out= arguments to the sizes the Meta kernel chose (warning, as
// the CPU does, if a non-empty one changes), so the CPU kernel never has to
// resize an alias, whose memory it does not own.
void resize_out_arguments(const c10::OperatorHandle& op, const Arguments& arguments,
                          const std::vector<int>& aliased, const std::vector<at::Tensor>& meta) {
  for (size_t result = 0; result < aliased.size(); ++result) {
    int index = aliased[result];
    if (index < 0 || !is_out_argument(op.schema().arguments()[index])) continue;
    at::Tensor out = arguments[index].toTensor();
    if (out.sizes() != meta[result].sizes()) at::native::resize_output(out, meta[result].sizes());
  }
}

// A new kiln tensor shaped like `like`, with its strides when they are dense.
at::Tensor new_output(const at::Tensor& like, c10::Device device) {
  c10::TensorOptions options = like.options().device(device);
  if (like.is_non_overlapping_and_dense()) {
    return at::empty_strided(like.sizes(), like.strides(), options);
  }
  return at::empty(like.sizes(), options);
}

// Writes the CPU kernel's result into `output` (the host alias of a kiln
// output), unless the kernel wrote it in place through the alias.
void store_result(const at::Tensor& output, const at::Tensor& result) {
  if (output.numel() == 0 || result.data_ptr() == output.data_ptr()) return;
  output.copy_(result);
}

// Only these dtypes are queued: for them the CPU kernels' dtype checks all
// pass, so the Meta kernel has seen every error the call can raise up front.
bool has_library_dtype(const at::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case at::kFloat:
    case at::kDouble:
    case at::kComplexFloat:
    case at::kComplexDouble:
      return true;
    default:
      return false;
  }
}

bool can_queue(const c10::OperatorHandle& op, const Arguments& arguments) {
  const auto& schema = op.schema();
  for (size_t i = 0; i < arguments.size(); ++i) {
    bool supported = true;
    for_each_tensor(arguments[i], [&](const at::Tensor& tensor) {
      supported = supported && has_library_dtype(tensor);
    });
    if (!supported) return false;
    // The _ex factorizations raise on a singular (or indefinite) input when
    // asked to: that needs the data.
    if (schema.arguments()[i].name() == "check_errors" && arguments[i].isBool() &&
        arguments[i].toBool()) {
      return false;
    }
  }
  return true;
}

Arguments pop_arguments(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  size_t count = op.schema().arguments().size();
  Arguments arguments(std::make_move_iterator(stack->end() - count),
                      std::make_move_iterator(stack->end()));
  torch::jit::drop(*stack, count);
  return arguments;
}

size_t bytes_touched(const Arguments& arguments, const std::vector<at::Tensor>& outputs) {
  size_t bytes = 0;
  for (const c10::IValue& value : arguments) {
    for_each_tensor(value, [&](const at::Tensor& tensor) { bytes += tensor.nbytes(); });
  }
  for (const at::Tensor& output : outputs) bytes += output.nbytes();
  return bytes;
}

// Runs the CPU kernel on `host` (the arguments' aliases) and stores its
// results into `host_outputs`, or on the block `part` of them along the
// split's dimension.
struct Part {
  int64_t dim, begin, length;
};
void run_block(const c10::OperatorHandle& op, const torch::jit::Stack& host,
               const std::vector<at::Tensor>& host_outputs, std::optional<Part> part,
               const std::vector<bool>& cut = {}) {
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  torch::jit::Stack stack = host;
  auto slice = [&](const at::Tensor& tensor) {
    return part ? tensor.narrow(part->dim, part->begin, part->length) : tensor;
  };
  for (size_t i = 0; part && i < cut.size(); ++i) {
    if (cut[i]) stack[i] = slice(stack[i].toTensor());
  }
  op.callBoxed(&stack);
  for (size_t result = 0; result < host_outputs.size(); ++result) {
    store_result(slice(host_outputs[result]), stack[result].toTensor());
  }
}

// The call cut into one block per thread along the split's dimension, over
// Kiln's pool (batch_split.h).
void run_split(const c10::OperatorHandle& op, const torch::jit::Stack& host,
               const std::vector<at::Tensor>& host_outputs, const BatchSplit& split, int threads) {
  const int64_t blocks = std::min<int64_t>(split.extent, threads);
  split_tasks(blocks, threads, [&](int64_t task) {
    const BlockRange range = block_range(split.extent, blocks, 1, task);
    if (range.end == range.begin) return;
    run_block(op, host, host_outputs, Part{split.dim, range.begin, range.end - range.begin}, split.cut);
  });
}

void run_synchronously(const c10::OperatorHandle& op, Arguments arguments, c10::Device device,
                       torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  std::vector<int> aliased = aliased_arguments(schema);
  std::optional<std::vector<at::Tensor>> meta = meta_results(op, arguments);
  if (meta) resize_out_arguments(op, arguments, aliased, *meta);
  // Inputs are read from the host now: wait for the work that writes them.
  check_status(current_runtime_stream(device.index()).synchronize());
  LibraryThreadScope threads(bytes_touched(arguments, {}) < kSmallLibraryBytes);
  torch::jit::Stack host = host_stack(arguments);
  // Without the Meta kernel's sizes, out= arguments are fresh CPU tensors the
  // kernel may resize; the kiln ones are resized to the results afterwards.
  for (size_t i = 0; i < arguments.size() && !meta; ++i) {
    if (is_out_argument(schema.arguments()[i]) && arguments[i].isTensor()) {
      host[i] = at::empty({0}, arguments[i].toTensor().options().device(c10::kCPU));
    }
  }
  op.callBoxed(&host);  // raises the CPU's error, at the call
  for (size_t result = 0; result < aliased.size(); ++result) {
    const at::Tensor& value = host[result].toTensor();
    at::Tensor output = aliased[result] >= 0 ? arguments[aliased[result]].toTensor()
                                             : new_output(value, device);
    if (output.sizes() != value.sizes()) at::native::resize_output(output, value.sizes());
    store_result(host_alias(output), value);
    stack->push_back(output);
  }
}

}  // namespace

void synchronous_library_call(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  std::string name = qualified_op_name(op);
  record_op(name, OpPath::kLibrary);
  Arguments arguments = pop_arguments(op, stack);
  c10::Device device = call_device(arguments, name);
  run_synchronously(op, std::move(arguments), device, stack);
}

void queued_library_call(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  std::string name = qualified_op_name(op);
  record_op(name, OpPath::kLibrary);
  Arguments arguments = pop_arguments(op, stack);
  c10::Device device = call_device(arguments, name);
  std::optional<std::vector<at::Tensor>> meta;
  if (can_queue(op, arguments)) meta = meta_results(op, arguments);
  if (!meta) return run_synchronously(op, std::move(arguments), device, stack);

  std::vector<int> aliased = aliased_arguments(op.schema());
  resize_out_arguments(op, arguments, aliased, *meta);
  std::vector<at::Tensor> outputs;
  for (size_t result = 0; result < aliased.size(); ++result) {
    outputs.push_back(aliased[result] >= 0 ? arguments[aliased[result]].toTensor()
                                           : new_output((*meta)[result], device));
  }
  size_t bytes = bytes_touched(arguments, outputs);
  // The aliases are made now: the caller may change a tensor's sizes or
  // strides in place (stft transposes its result) before the work runs. The
  // work holds the kiln tensors too, so their memory lives until it ran,
  // unless it is reused in stream order (kernel_launch.h).
  torch::jit::Stack host = host_stack(arguments);
  std::vector<at::Tensor> host_outputs;
  for (const at::Tensor& output : outputs) host_outputs.push_back(host_alias(output));
  std::vector<at::Tensor> held = outputs;
  for (const c10::IValue& value : arguments) {
    for_each_tensor(value, [&](const at::Tensor& tensor) { held.push_back(tensor); });
  }
  drop_tensors_reused_in_stream_order(held);
  const bool small = bytes < kSmallLibraryBytes;
  const int threads = launch_thread_count();
  BatchSplit split = batch_split(op, arguments, outputs);
  // The op's name lives as long as its registration: a static string for the stream.
  const char* label = op.operator_name().name.c_str();
  check_status(current_runtime_stream(device.index()).launch(
      label, bytes, [op, held, host, host_outputs, small, threads, split]() -> Status {
        if (split.splits() && splits_over_pool(small, threads)) {
          run_split(op, host, host_outputs, split, threads);
          return Status();
        }
        LibraryThreadScope scope(small);
        run_block(op, host, host_outputs, std::nullopt);
        return Status();
      }));
  for (const at::Tensor& output : outputs) stack->push_back(output);
}

}  // namespace kiln::torch_integration::library
