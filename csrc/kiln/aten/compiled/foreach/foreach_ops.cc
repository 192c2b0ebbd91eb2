#include "kiln/aten/compiled/foreach/foreach_ops.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/device_checks.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

// A foreach overload and the op it applies to each group: a pointwise op,
// or a reduction of the whole tensor (_foreach_norm). That op's schema takes
// the foreach op's arguments in the same order, each list replaced by one of
// its tensors and a scalar list by one of its scalars; arguments it has
// beyond them take their defaults. `arguments` reorders when the schemas
// differ: per argument of the per-group op, the foreach argument's index, or
// '-' for its default.
struct ForeachOpName {
  const char* name;       // "aten::_foreach_add_.List", also its op-tracking name
  const char* pointwise;  // "aten::add_"
  const char* overload;   // "Tensor"
  const char* arguments = "";
};

// The Scalar, ScalarList and List overloads of a binary op, in place and
// functional.
#define KILN_FOREACH_BINARY(op, scalar_overload, tensor_overload)                    \
  {"aten::_foreach_" #op "_.Scalar", "aten::" #op "_", scalar_overload},            \
  {"aten::_foreach_" #op ".Scalar", "aten::" #op, scalar_overload},                 \
  {"aten::_foreach_" #op "_.ScalarList", "aten::" #op "_", scalar_overload},        \
  {"aten::_foreach_" #op ".ScalarList", "aten::" #op, scalar_overload},             \
  {"aten::_foreach_" #op "_.List", "aten::" #op "_", tensor_overload},              \
  {"aten::_foreach_" #op ".List", "aten::" #op, tensor_overload}
// The Tensor overload: one 0-dim tensor shared by every group. (ATen turns
// _foreach_add's into the Scalar overload, with .item(), before any backend.)
#define KILN_FOREACH_SHARED_TENSOR(op)                       \
  {"aten::_foreach_" #op "_.Tensor", "aten::" #op "_", "Tensor"}, \
  {"aten::_foreach_" #op ".Tensor", "aten::" #op, "Tensor"}
#define KILN_FOREACH_UNARY(op) {"aten::_foreach_" #op "_", "aten::" #op "_", ""}, {"aten::_foreach_" #op, "aten::" #op, ""}

constexpr ForeachOpName kForeachOps[] = {
    KILN_FOREACH_BINARY(add, "Scalar", "Tensor"),
    KILN_FOREACH_BINARY(sub, "Scalar", "Tensor"),
    KILN_FOREACH_BINARY(mul, "Scalar", "Tensor"),
    KILN_FOREACH_BINARY(div, "Scalar", "Tensor"),
    KILN_FOREACH_BINARY(clamp_min, "", "Tensor"),
    KILN_FOREACH_BINARY(clamp_max, "", "Tensor"),
    KILN_FOREACH_SHARED_TENSOR(mul),
    KILN_FOREACH_SHARED_TENSOR(div),
    {"aten::_foreach_pow_.Scalar", "aten::pow_", "Scalar"},
    {"aten::_foreach_pow.Scalar", "aten::pow", "Tensor_Scalar"},
    {"aten::_foreach_pow_.ScalarList", "aten::pow_", "Scalar"},
    {"aten::_foreach_pow.ScalarList", "aten::pow", "Tensor_Scalar"},
    {"aten::_foreach_pow_.List", "aten::pow_", "Tensor"},
    {"aten::_foreach_pow.List", "aten::pow", "Tensor_Tensor"},
    {"aten::_foreach_addcmul_.Scalar", "aten::addcmul_", ""},
    {"aten::_foreach_addcmul.Scalar", "aten::addcmul", ""},
    {"aten::_foreach_addcmul_.ScalarList", "aten::addcmul_", ""},
    {"aten::_foreach_addcmul.ScalarList", "aten::addcmul", ""},
    {"aten::_foreach_addcdiv_.Scalar", "aten::addcdiv_", ""},
    {"aten::_foreach_addcdiv.Scalar", "aten::addcdiv", ""},
    {"aten::_foreach_addcdiv_.ScalarList", "aten::addcdiv_", ""},
    {"aten::_foreach_addcdiv.ScalarList", "aten::addcdiv", ""},
    {"aten::_foreach_lerp_.Scalar", "aten::lerp_", "Scalar"},
    {"aten::_foreach_lerp.Scalar", "aten::lerp", "Scalar"},
    {"aten::_foreach_lerp_.ScalarList", "aten::lerp_", "Scalar"},
    {"aten::_foreach_lerp.ScalarList", "aten::lerp", "Scalar"},
    {"aten::_foreach_lerp_.List", "aten::lerp_", "Tensor"},
    {"aten::_foreach_lerp.List", "aten::lerp", "Tensor"},
    KILN_FOREACH_UNARY(sqrt),
    KILN_FOREACH_UNARY(exp),
    KILN_FOREACH_UNARY(log),
    KILN_FOREACH_UNARY(neg),
    KILN_FOREACH_UNARY(abs),
    KILN_FOREACH_UNARY(reciprocal),
    KILN_FOREACH_UNARY(sign),
    // linalg_vector_norm(self, ord, dim, keepdim, *, dtype): the norm of each whole tensor.
    {"aten::_foreach_norm.Scalar", "aten::linalg_vector_norm", "", "01--2"},
};

#undef KILN_FOREACH_BINARY
#undef KILN_FOREACH_SHARED_TENSOR
#undef KILN_FOREACH_UNARY

enum class ArgumentKind { kTensorList, kScalarList, kTensor, kOther };

// A foreach overload resolved against the dispatcher.
struct ForeachOp {
  const char* name = nullptr;
  std::optional<c10::OperatorHandle> pointwise;
  std::vector<ArgumentKind> kinds;     // per foreach argument
  // Per argument of the per-group op: the foreach argument's index, or -1
  // for the default in `defaults`.
  std::vector<int> sources;
  std::vector<c10::IValue> defaults;
  bool in_place = false;               // the foreach op returns nothing
};

ArgumentKind kind_of(const c10::Argument& argument) {
  const c10::TypePtr& type = argument.type();
  if (type->kind() == c10::TypeKind::ListType) {
    const c10::TypePtr& element = type->containedType(0);
    if (element->kind() == c10::TypeKind::TensorType) return ArgumentKind::kTensorList;
    if (element->kind() == c10::TypeKind::NumberType) return ArgumentKind::kScalarList;
  }
  if (type->kind() == c10::TypeKind::TensorType) return ArgumentKind::kTensor;
  return ArgumentKind::kOther;
}

ForeachOp resolve(const ForeachOpName& name, const c10::OperatorHandle& foreach) {
  ForeachOp op;
  op.name = name.name;
  op.pointwise = c10::Dispatcher::singleton().findSchemaOrThrow(name.pointwise, name.overload);
  const auto& arguments = foreach.schema().arguments();
  const auto& pointwise_arguments = op.pointwise->schema().arguments();
  for (const c10::Argument& argument : arguments) op.kinds.push_back(kind_of(argument));
  const std::string order = name.arguments;
  TORCH_INTERNAL_ASSERT(order.empty() ? pointwise_arguments.size() >= arguments.size()
                                      : order.size() == pointwise_arguments.size(),
                        name.name, ": its arguments do not map onto ", name.pointwise, ".", name.overload, "'s");
  for (size_t a = 0; a < pointwise_arguments.size(); ++a) {
    int source = order.empty() ? (a < arguments.size() ? static_cast<int>(a) : -1)
                               : (order[a] == '-' ? -1 : order[a] - '0');
    op.sources.push_back(source);
    if (source >= 0) continue;
    TORCH_INTERNAL_ASSERT(pointwise_arguments[a].default_value().has_value(), name.pointwise,
                          " has an argument without default that ", name.name, " does not give");
    op.defaults.push_back(*pointwise_arguments[a].default_value());
  }
  op.in_place = foreach.schema().returns().empty();
  return op;
}

// One call's arguments, seen as groups.
struct Groups {
  Groups(const ForeachOp& op, const std::vector<c10::IValue>& arguments) : op(op), arguments(arguments) {}

  const ForeachOp& op;
  const std::vector<c10::IValue>& arguments;
  std::vector<c10::ArrayRef<c10::IValue>> lists;  // the Tensor[] arguments, self first
  c10::ArrayRef<c10::IValue> scalars;              // the Scalar[] argument, if any
  bool has_scalar_list = false;
  const at::Tensor* shared = nullptr;              // the Tensor argument, if any
  size_t size = 0;

  const at::Tensor& tensor(size_t list, size_t group) const { return lists[list][group].toTensor(); }
};

Groups parse(const ForeachOp& op, const std::vector<c10::IValue>& arguments) {
  Groups groups(op, arguments);
  for (size_t a = 0; a < arguments.size(); ++a) {
    switch (op.kinds[a]) {
      case ArgumentKind::kTensorList: groups.lists.push_back(arguments[a].toListRef()); break;
      case ArgumentKind::kScalarList:
        groups.scalars = arguments[a].toListRef();
        groups.has_scalar_list = true;
        break;
      case ArgumentKind::kTensor: groups.shared = &arguments[a].toTensor(); break;
      case ArgumentKind::kOther: break;
    }
  }
  // ATen's checks (ATen/native/ForeachUtils.h), with its messages.
  for (const auto& list : groups.lists) TORCH_CHECK(!list.empty(), "Tensor list must have at least one tensor.");
  groups.size = groups.lists[0].size();
  for (size_t list = 1; list < groups.lists.size(); ++list) {
    TORCH_CHECK(groups.lists[list].size() == groups.size, "Tensor lists must have the same number of tensors, got ",
                groups.size, " and ", groups.lists[list].size());
  }
  TORCH_CHECK(!groups.has_scalar_list || groups.scalars.size() == groups.size,
              "Tensor list must have same number of elements as scalar list.");
  // A tensor on another device fails the call before any group runs (group
  // by group, the groups before it would have changed); a CPU 0-dim tensor is
  // a scalar to the per-group op, as it is to any kiln op.
  const c10::Device device = groups.tensor(0, 0).device();
  for (const auto& list : groups.lists) {
    for (const c10::IValue& value : list) {
      const at::Tensor& tensor = value.toTensor();
      // A 0-dim CPU tensor is a scalar any device may read.
      if (tensor.defined() && !(tensor.device().is_cpu() && tensor.dim() == 0)) {
        check_same_device(device, tensor, op.name);
      }
    }
  }
  if (groups.shared != nullptr) {
    TORCH_CHECK(groups.shared->dim() == 0 && groups.shared->numel() == 1,
                "scalar tensor expected to be 0 dim but it has ", groups.shared->dim(), " dimensions and ",
                groups.shared->numel(), " elements.");
  }
  return groups;
}

// The pointwise op's arguments for group `group`; with `flat`, its tensors
// viewed as one dim (what a capture runs on).
torch::jit::Stack group_stack(const Groups& groups, size_t group, bool flat) {
  torch::jit::Stack stack;
  stack.reserve(groups.op.sources.size());
  size_t next_default = 0;
  for (int a : groups.op.sources) {
    if (a < 0) {
      stack.push_back(groups.op.defaults[next_default++]);
      continue;
    }
    switch (groups.op.kinds[a]) {
      case ArgumentKind::kTensorList: {
        const at::Tensor& tensor = groups.arguments[a].toListRef()[group].toTensor();
        stack.emplace_back(flat ? tensor.view({tensor.numel()}) : tensor);
        break;
      }
      case ArgumentKind::kScalarList: stack.push_back(groups.scalars[group]); break;
      default: stack.push_back(groups.arguments[a]);
    }
  }
  return stack;
}

// What the portable kernel does: the per-group op, group by group.
std::vector<at::Tensor> run_group_by_group(const Groups& groups) {
  std::vector<at::Tensor> results;
  for (size_t group = 0; group < groups.size; ++group) {
    torch::jit::Stack stack = group_stack(groups, group, /*flat=*/false);
    groups.op.pointwise->callBoxed(stack);
    if (!groups.op.in_place) results.push_back(stack[0].toTensor());
  }
  return results;
}

enum class ScalarKind { kFloating, kIntegral, kBoolean, kOther };

ScalarKind scalar_kind(const c10::IValue& value) {
  if (value.isDouble()) return ScalarKind::kFloating;
  if (value.isInt() || value.isSymInt()) return ScalarKind::kIntegral;
  if (value.isBool()) return ScalarKind::kBoolean;
  return ScalarKind::kOther;
}

bool same_scalar(const c10::IValue& first, const c10::IValue& second) {
  if (first.isDouble() && second.isDouble()) {
    double a = first.toDouble(), b = second.toDouble();
    return std::memcmp(&a, &b, sizeof(a)) == 0;  // bits: -0.0 and 0.0 differ, NaN meets NaN
  }
  if (first.isInt() && second.isInt()) return first.toInt() == second.toInt();
  if (first.isBool() && second.isBool()) return first.toBool() == second.toBool();
  return false;
}

// Whether every group would make the same launch as the group captured.
bool replayable(const Groups& groups) {
  const at::Tensor& first = groups.tensor(0, 0);
  if (!first.defined() || !first.device().is_privateuseone()) return false;
  for (size_t list = 0; list < groups.lists.size(); ++list) {
    const at::Tensor& head = groups.tensor(list, 0);
    if (!head.defined() || at::isComplexType(head.scalar_type())) return false;
    for (size_t group = 0; group < groups.size; ++group) {
      const at::Tensor& tensor = groups.tensor(list, group);
      if (!tensor.defined() || tensor.device() != first.device() || tensor.scalar_type() != head.scalar_type() ||
          !tensor.sizes().equals(groups.tensor(0, group).sizes()) || !tensor.is_contiguous()) {
        return false;
      }
    }
  }
  if (groups.has_scalar_list) {
    const ScalarKind kind = scalar_kind(groups.scalars[0]);
    if (kind == ScalarKind::kOther) return false;
    for (const c10::IValue& scalar : groups.scalars) {
      if (scalar_kind(scalar) != kind) return false;
    }
  }
  if (groups.shared != nullptr && at::isComplexType(groups.shared->scalar_type())) return false;
  return true;
}

char* data_of(const at::Tensor& tensor) { return static_cast<char*>(tensor.data_ptr()); }

// A captured launch and where each of its operands comes from in any group.
struct Capture {
  struct Source {
    enum class Kind { kList, kResult, kShared } kind;
    int list = 0;
  };
  RecordedLaunch launch;
  c10::SmallVector<Source, 8> sources;  // per kernel operand
  size_t bytes_per_element = 0;
  at::TensorOptions result_options;     // functional ops: their result's
  // A reduction of the whole group into one element (one position, the
  // group's elements its cost), not one position per element.
  bool reduction = false;
};

// The list whose tensor of `group` starts at `data`, when every list that
// does holds the same tensors in every group (so the choice cannot matter);
// -1 otherwise.
int list_at(const Groups& groups, size_t group, const char* data) {
  int found = -1;
  for (size_t list = 0; list < groups.lists.size(); ++list) {
    if (data_of(groups.tensor(list, group)) != data) continue;
    if (found < 0) {
      found = static_cast<int>(list);
      continue;
    }
    for (size_t other = 0; other < groups.size; ++other) {
      if (!groups.tensor(list, other).is_same(groups.tensor(found, other))) return -1;
    }
  }
  return found;
}

// The per-group op's launch for `group`, run on its flat views and captured,
// not run; nullopt when it is not one launch over one flat dim (one position
// per element, or one position reducing them all) whose operands are the
// group's tensors, its result or the shared 0-dim tensor.
std::optional<Capture> capture(const Groups& groups, size_t group) {
  torch::jit::Stack stack = group_stack(groups, group, /*flat=*/true);
  const int64_t elements = groups.tensor(0, group).numel();
  Capture result;
  {
    LaunchRecording recording(LaunchRecording::Mode::kCapture);
    groups.op.pointwise->callBoxed(stack);
    if (recording.launches().size() != 1) return std::nullopt;
    result.launch = recording.launches().front();
  }
  const LaunchArgs& args = result.launch.args;
  const LaunchShape& shape = result.launch.shape;
  const at::Tensor* output = groups.op.in_place ? nullptr : &stack[0].toTensor();
  if (output != nullptr) result.result_options = output->options();
  result.reduction = output != nullptr && output->dim() == 0 && shape.positions == 1 &&
                     shape.cost_per_position == elements && elements >= 2;
  if (args.sizes[0] != elements || (shape.positions != elements && !result.reduction)) return std::nullopt;
  for (int operand = 0; operand < ir::kMaxOperands && args.data[operand] != nullptr; ++operand) {
    const char* data = args.data[operand];
    const int64_t stride = args.strides[operand][0];
    int list = stride == 1 ? list_at(groups, group, data) : -1;
    if (list >= 0) {
      result.sources.push_back({Capture::Source::Kind::kList, list});
    } else if (output != nullptr && data == data_of(*output) && stride == (result.reduction ? 0 : 1)) {
      result.sources.push_back({Capture::Source::Kind::kResult});
    } else if (stride == 0 && elements >= 2 && groups.shared != nullptr &&
               groups.shared->device().is_privateuseone() && data == data_of(*groups.shared)) {
      // At two elements or more a stride-0 operand was compiled as broadcast.
      result.sources.push_back({Capture::Source::Kind::kShared});
    } else {
      return std::nullopt;
    }
  }
  result.bytes_per_element = result.launch.shape.bytes / static_cast<size_t>(elements);
  return result;
}

// Per group, which capture it replays: one capture per distinct scalar (all
// groups share one without a scalar list), taken on the largest group of
// that scalar: a group the op would have split into more launches (a large
// reduction) then fails the capture instead of being replayed as one.
// Returns false when a capture does not replay, or a reduction has a group
// without elements. Other groups without elements replay nothing.
bool capture_groups(const Groups& groups, std::vector<Capture>& captures, std::vector<int>& capture_of) {
  capture_of.assign(groups.size, -1);
  std::vector<size_t> chosen;  // per capture, its group
  bool has_empty_group = false;
  for (size_t group = 0; group < groups.size; ++group) {
    const int64_t elements = groups.tensor(0, group).numel();
    if (elements == 0) {
      has_empty_group = true;
      continue;
    }
    size_t index = 0;
    while (index < chosen.size() &&
           !(!groups.has_scalar_list || same_scalar(groups.scalars[chosen[index]], groups.scalars[group]))) {
      ++index;
    }
    if (index == chosen.size()) {
      chosen.push_back(group);
    } else if (elements > groups.tensor(0, chosen[index]).numel()) {
      chosen[index] = group;
    }
    capture_of[group] = static_cast<int>(index);
  }
  for (size_t group : chosen) {
    std::optional<Capture> captured = capture(groups, group);
    if (!captured.has_value()) return false;
    // A reduction of nothing may be an error (the infinity norm): the op decides, group by group.
    if (captured->reduction && has_empty_group) return false;
    captures.push_back(std::move(*captured));
  }
  return true;
}

// The replay of a call's captures: per group with elements, which capture it
// takes, its element count and its operands' data. Each capture's launch is
// rewritten in place for each group in turn, as the groups run one after
// another (a launch is 1.3 KB: copying it per group cost more than the rest).
struct Replay {
  std::vector<RecordedLaunch> launches;  // per capture
  std::vector<char> reductions;          // per capture: Capture::reduction
  std::vector<int> operand_counts;       // per capture
  std::vector<int> capture;              // per launched group
  std::vector<int64_t> elements;
  std::vector<char*> data;               // the launched groups' operands, one after another

  void run() {
    size_t next = 0;
    for (size_t launched = 0; launched < capture.size(); ++launched) {
      RecordedLaunch& launch = launches[capture[launched]];
      for (int operand = 0; operand < operand_counts[capture[launched]]; ++operand) {
        launch.args.data[operand] = data[next++];
      }
      launch.args.sizes[0] = elements[launched];
      if (reductions[capture[launched]]) {
        launch.shape.cost_per_position = std::max<int64_t>(elements[launched], 1);
      } else {
        launch.shape.positions = elements[launched];
      }
      run_now(launch.entry, launch.args, launch.shape);
    }
  }
};

// Element `index` of the 1-D `buffer` as a 0-dim tensor of its own, made
// directly on the buffer's storage (no dispatcher call).
at::Tensor element_of(const at::Tensor& buffer, int64_t index) {
  at::Tensor element = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(buffer.storage()), buffer.key_set(),
                                                                buffer.dtype());
  element.unsafeGetTensorImpl()->set_sizes_and_strides(c10::IntArrayRef(), c10::IntArrayRef(),
                                                       buffer.storage_offset() + index);
  return element;
}

std::vector<at::Tensor> run_replayed(const Groups& groups, const std::vector<Capture>& captures,
                                     const std::vector<int>& capture_of) {
  std::vector<at::Tensor> results;
  // A reduction's results share one buffer, one element each, as CUDA's
  // _foreach_norm returns its norms: one allocation instead of one per group.
  at::Tensor reduction_buffer;
  if (!groups.op.in_place && captures.front().reduction) {
    reduction_buffer = at::empty({static_cast<int64_t>(groups.size)}, captures.front().result_options);
  }
  Replay replay;
  for (const Capture& captured : captures) {
    replay.launches.push_back(captured.launch);
    replay.reductions.push_back(captured.reduction);
    replay.operand_counts.push_back(static_cast<int>(captured.sources.size()));
  }
  replay.capture.reserve(groups.size);
  replay.elements.reserve(groups.size);
  replay.data.reserve(groups.size * captures.front().sources.size());
  std::vector<at::Tensor> keep_alive;
  keep_alive.reserve(groups.size * (groups.lists.size() + 1) + 1);
  size_t bytes = 0;
  for (size_t group = 0; group < groups.size; ++group) {
    const at::Tensor& self = groups.tensor(0, group);
    if (!groups.op.in_place) {
      results.push_back(reduction_buffer.defined() ? element_of(reduction_buffer, static_cast<int64_t>(group))
                                                   : at::empty(self.sizes(), captures.front().result_options));
    }
    for (size_t list = 0; list < groups.lists.size(); ++list) keep_alive.push_back(groups.tensor(list, group));
    if (capture_of[group] < 0) continue;  // no elements
    const Capture& captured = captures[capture_of[group]];
    for (size_t operand = 0; operand < captured.sources.size(); ++operand) {
      const Capture::Source& source = captured.sources[operand];
      switch (source.kind) {
        case Capture::Source::Kind::kList: replay.data.push_back(data_of(groups.tensor(source.list, group))); break;
        case Capture::Source::Kind::kResult: replay.data.push_back(data_of(results.back())); break;
        case Capture::Source::Kind::kShared: replay.data.push_back(captured.launch.args.data[operand]); break;
      }
    }
    replay.capture.push_back(capture_of[group]);
    replay.elements.push_back(self.numel());
    bytes += captured.bytes_per_element * static_cast<size_t>(std::max<int64_t>(self.numel(), 1));
  }
  keep_alive.insert(keep_alive.end(), results.begin(), results.end());
  if (groups.shared != nullptr) keep_alive.push_back(*groups.shared);
  record_static_op(groups.op.name, OpPath::kCompiled);
  launch_work(stream_of(groups.tensor(0, 0)), groups.op.name, bytes,
              [replay = std::move(replay)]() mutable { replay.run(); }, std::move(keep_alive));
  return results;
}

void run_foreach(const ForeachOp& op, torch::jit::Stack* stack) {
  const size_t count = op.kinds.size();
  std::vector<c10::IValue> arguments(std::make_move_iterator(stack->end() - static_cast<std::ptrdiff_t>(count)),
                                     std::make_move_iterator(stack->end()));
  torch::jit::drop(*stack, count);
  const Groups groups = parse(op, arguments);
  std::vector<at::Tensor> results;
  std::vector<Capture> captures;
  std::vector<int> capture_of;
  if (replayable(groups) && capture_groups(groups, captures, capture_of) && !captures.empty()) {
    results = run_replayed(groups, captures, capture_of);
  } else {
    results = run_group_by_group(groups);
  }
  if (!op.in_place) stack->emplace_back(std::move(results));
}

// The boxed kernel of one foreach overload; resolves the pointwise op on its
// first call (the dispatcher has every schema by then).
class ForeachKernel final : public c10::OperatorKernel {
 public:
  explicit ForeachKernel(const ForeachOpName& name) : name_(name) {}

  void operator()(const c10::OperatorHandle& handle, c10::DispatchKeySet, torch::jit::Stack* stack) {
    std::call_once(resolved_, [&] { op_ = resolve(name_, handle); });
    run_foreach(op_, stack);
  }

 private:
  const ForeachOpName& name_;
  std::once_flag resolved_;
  ForeachOp op_;
};

}  // namespace

void register_foreach_ops(torch::Library& library) {
  for (const ForeachOpName& name : kForeachOps) {
    const std::string schema_name = std::string(name.name).substr(sizeof("aten::") - 1);
    library.impl(schema_name.c_str(), torch::CppFunction::makeFromBoxedFunctor(std::make_unique<ForeachKernel>(name)));
  }
}

}  // namespace kiln::torch_integration::compiled
