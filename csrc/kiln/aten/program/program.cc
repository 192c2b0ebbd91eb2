#include "kiln/aten/program/program.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <c10/util/strides.h>

#include <algorithm>
#include <optional>

#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/aten/program/fused_launch.h"
#include "kiln/base/hash.h"
#include "kiln/c10/device_guard.h"
#include "kiln/c10/status_error.h"
#include "kiln/compiler/passes/dead_code.h"
#include "kiln/compiler/passes/memory_plan.h"

namespace kiln::torch_integration::program {
namespace {

// The kernel-signature key of a fused kernel: a digest of everything that
// shapes its code.
std::string kernel_key(const compiler::FusedKernel& kernel) {
  std::string text = ir::print_fragment(kernel.expression);
  const char* kinds[] = {"|pointwise", "|reduce ", "|row "};
  text += kinds[static_cast<int>(kernel.kind)];
  if (kernel.kind == ir::KernelKind::kReduction) {
    text += std::string(ir::reduce_op_name(kernel.reduce_op)) + " %" + std::to_string(kernel.reduced_value) +
            "|" + ir::print_fragment(kernel.epilogue);
  }
  for (size_t stage = 0; stage < kernel.stage_ops.size(); ++stage) {
    text += std::string(ir::reduce_op_name(kernel.stage_ops[stage])) + " %" +
            std::to_string(kernel.stage_values[stage]) + ";";
  }
  if (kernel.kind == ir::KernelKind::kRow) {
    text += " dims";
    for (int dim : kernel.reduced_dims) text += " " + std::to_string(dim);
  }
  text += "|results";
  for (ir::ValueId result : kernel.results) text += " " + std::to_string(result);
  return "fused:" + digest_hex(text);
}

// What torch.profiler shows for a fused kernel's step: its kind and the start
// of its signature key, which KILN_DUMP_DIR's file names begin with.
const char* fused_op_name(ir::KernelKind kind) {
  const char* names[] = {kFusedPointwiseName, kFusedReductionName, kFusedRowName};
  return names[static_cast<int>(kind)];
}

std::string kernel_label(const compiler::FusedKernel& kernel, const std::string& key) {
  return std::string(fused_op_name(kernel.kind)) + "[" + key.substr(key.find(':') + 1, 12) + "]";
}

// Bytes of the storage a value spans: 1 + sum((size - 1) * stride) elements
// (contiguous strides when `strides` is empty), 0 when a dim is empty.
int64_t span_bytes(const ir::TensorValue& value, const std::vector<int64_t>& strides) {
  const c10::DimVector layout = strides.empty() ? c10::contiguous_strides(value.sizes)
                                                : c10::DimVector(strides.begin(), strides.end());
  int64_t elements = 1;
  for (size_t dim = 0; dim < value.sizes.size(); ++dim) {
    if (value.sizes[dim] == 0) return 0;
    elements += (value.sizes[dim] - 1) * layout[dim];
  }
  return elements * ir::dtype_size(value.dtype);
}

// Deterministic factories: the same arguments always give the same tensor.
bool is_deterministic_factory(const std::string& name) {
  static const char* const kFactories[] = {"aten::arange", "aten::full", "aten::zeros", "aten::ones",
                                           "aten::scalar_tensor", "aten::linspace", "aten::eye"};
  return std::find(std::begin(kFactories), std::end(kFactories), name) != std::end(kFactories);
}

}  // namespace

Program::Program(ProgramDescription description) : description_(std::move(description)) {
  ir::Graph& graph = description_.graph;
  const std::string problem = ir::check_graph(graph);
  TORCH_CHECK(problem.empty(), "kiln: the graph handed to the compiler is malformed: ", problem);
  statistics_.nodes = static_cast<int>(graph.nodes.size());
  input_graph_text_ = ir::print_graph(graph);
  statistics_.removed_nodes = compiler::eliminate_dead_code(graph);
  // A view handed back to the caller needs the view op's own tensor (autograd
  // tracks views), so only views the program reads itself are made statically.
  for (const ir::GraphNode& node : graph.nodes) {
    if (node.kind != ir::GraphNodeKind::kExtern || node.outputs.empty()) continue;
    if (std::find(graph.outputs.begin(), graph.outputs.end(), node.outputs[0]) != graph.outputs.end()) {
      description_.calls[node.call].static_view.reset();
    }
  }
  find_constant_calls();
  fusion_ = compiler::fuse(graph);
  for (const compiler::FusedKernel& kernel : fusion_.kernels) {
    kernel_keys_.push_back(kernel_key(kernel));
    kernel_labels_.push_back(kernel_label(kernel, kernel_keys_.back()));
    TORCH_CHECK(kernel.inputs.size() + kernel.outputs.size() <= ir::kMaxOperands,
                "kiln: a fused kernel has more than ", ir::kMaxOperands, " operands");
    statistics_.fused_nodes += static_cast<int>(kernel.nodes.size());
    statistics_.stored_values += static_cast<int64_t>(kernel.outputs.size());
    statistics_.unstored_values += static_cast<int64_t>(kernel.nodes.size() - kernel.outputs.size());
  }
  statistics_.kernels = static_cast<int>(fusion_.kernels.size());
  bound_ = std::make_unique<std::atomic<const BoundLaunch*>[]>(fusion_.kernels.size());
  for (size_t k = 0; k < fusion_.kernels.size(); ++k) bound_[k].store(nullptr, std::memory_order_relaxed);

  // Liveness: each value is released after the last step that reads it,
  // unless it is a graph output.
  std::vector<int> last_read(graph.values.size(), -1);
  auto note_reads = [&](const std::vector<ir::GraphValueId>& values, int step) {
    for (ir::GraphValueId value : values) last_read[value] = step;
  };
  for (size_t s = 0; s < fusion_.steps.size(); ++s) {
    const compiler::ProgramStep& step = fusion_.steps[s];
    if (step.kind == compiler::ProgramStep::Kind::kKernel) {
      note_reads(fusion_.kernels[step.index].inputs, static_cast<int>(s));
    } else {
      ++statistics_.extern_calls;
      note_reads(graph.nodes[step.index].inputs, static_cast<int>(s));
    }
  }
  for (ir::GraphValueId output : graph.outputs) last_read[output] = -1;
  releases_.resize(fusion_.steps.size());
  for (size_t value = 0; value < last_read.size(); ++value) {
    if (last_read[value] >= 0) releases_[last_read[value]].push_back(static_cast<ir::GraphValueId>(value));
  }
  plan_memory(last_read);
  choose_outputs_into_inputs();
}

// A result copied into an input at the end of the graph is stored into the
// input by its own kernel when nothing could see the difference: the kernel
// is pointwise and reads the input, if at all, itself (at the element it
// writes) and no view of it; neither the result nor the input is a graph
// output; and no step after the kernel reads or writes the input, or a view
// of it, except the copy back. The layout and storage are checked at each
// run (input_to_store_into).
void Program::choose_outputs_into_inputs() {
  const ir::Graph& graph = description_.graph;
  into_input_.assign(graph.values.size(), -1);
  std::vector<int> writer_step(graph.values.size(), -1);
  for (size_t s = 0; s < fusion_.steps.size(); ++s) {
    const compiler::ProgramStep& step = fusion_.steps[s];
    if (step.kind != compiler::ProgramStep::Kind::kKernel) continue;
    if (fusion_.kernels[step.index].kind != ir::KernelKind::kPointwise) continue;
    for (ir::GraphValueId output : fusion_.kernels[step.index].outputs) writer_step[output] = static_cast<int>(s);
  }
  auto is_output = [&](ir::GraphValueId value) {
    return std::find(graph.outputs.begin(), graph.outputs.end(), value) != graph.outputs.end();
  };
  std::vector<bool> taken(graph.inputs.size(), false);
  for (const auto& [value, input] : description_.output_into_input) {
    if (value < 0 || static_cast<size_t>(value) >= graph.values.size() || input < 0 ||
        static_cast<size_t>(input) >= graph.inputs.size() || taken[input]) {
      continue;
    }
    const ir::GraphValueId target = graph.inputs[input];
    const int step = writer_step[value];
    if (step < 0 || is_output(value) || is_output(target) ||
        graph.values[value].dtype != graph.values[target].dtype ||
        graph.values[value].sizes != graph.values[target].sizes) {
      continue;
    }
    // The input and every view of it an extern call makes (graph order is
    // a topological order, so one pass finds views of views).
    std::vector<bool> aliases(graph.values.size(), false);
    aliases[target] = true;
    for (const ir::GraphNode& node : graph.nodes) {
      if (node.kind != ir::GraphNodeKind::kExtern || !node.aliases_input) continue;
      const bool of_target = std::any_of(node.inputs.begin(), node.inputs.end(),
                                         [&](ir::GraphValueId input) { return aliases[input]; });
      if (!of_target) continue;
      for (ir::GraphValueId output : node.outputs) {
        if (output != ir::kNoValue) aliases[output] = true;
      }
    }
    auto reads_alias = [&](const std::vector<ir::GraphValueId>& reads, bool except_target) {
      return std::any_of(reads.begin(), reads.end(), [&](ir::GraphValueId read) {
        return aliases[read] && !(except_target && read == target);
      });
    };
    // The kernel itself may read the input at the element it writes, but not
    // a view of it, which it would read elsewhere.
    bool unsafe = reads_alias(fusion_.kernels[fusion_.steps[step].index].inputs, /*except_target=*/true);
    for (size_t s = step + 1; s < fusion_.steps.size() && !unsafe; ++s) {
      const compiler::ProgramStep& later = fusion_.steps[s];
      const std::vector<ir::GraphValueId>& reads = later.kind == compiler::ProgramStep::Kind::kKernel
                                                       ? fusion_.kernels[later.index].inputs
                                                       : graph.nodes[later.index].inputs;
      if (!reads_alias(reads, /*except_target=*/false)) continue;
      // The copy back itself: an extern reading just the input and the value.
      const bool copy_back = later.kind == compiler::ProgramStep::Kind::kExtern && reads.size() == 2 &&
                             std::find(reads.begin(), reads.end(), target) != reads.end() &&
                             std::find(reads.begin(), reads.end(), value) != reads.end();
      unsafe = !copy_back;
    }
    if (unsafe) continue;
    into_input_[value] = input;
    taken[input] = true;
    stores_into_inputs_ = true;
  }
}

std::vector<bool> Program::shared_inputs(const std::vector<at::Tensor>& values) const {
  const ir::Graph& graph = description_.graph;
  if (!stores_into_inputs_) return {};
  std::vector<bool> shared(graph.inputs.size(), false);
  std::vector<std::pair<const c10::StorageImpl*, size_t>> storages;
  storages.reserve(graph.inputs.size());
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const at::Tensor& input = values[graph.inputs[i]];
    if (input.defined() && input.has_storage()) storages.emplace_back(input.storage().unsafeGetStorageImpl(), i);
  }
  std::sort(storages.begin(), storages.end());
  for (size_t k = 1; k < storages.size(); ++k) {
    if (storages[k].first == storages[k - 1].first) shared[storages[k].second] = shared[storages[k - 1].second] = true;
  }
  return shared;
}

at::Tensor Program::input_to_store_into(ir::GraphValueId value, const std::vector<at::Tensor>& values,
                                        const std::vector<bool>& shared_inputs) const {
  const int input = into_input_[value];
  if (input < 0) return at::Tensor();
  const ir::Graph& graph = description_.graph;
  const at::Tensor& target = values[graph.inputs[input]];
  const ir::TensorValue& tensor = graph.values[value];
  if (!target.defined() || !target.device().is_privateuseone() ||
      target.device().index() != description_.device_index ||
      target.scalar_type() != compiled::to_scalar_type(tensor.dtype) || !target.sizes().equals(tensor.sizes) ||
      !target.strides().equals(strides_of(value)) || target.is_conj() || target.is_neg() ||
      (c10::GradMode::is_enabled() && target.requires_grad()) || shared_inputs[input]) {
    return at::Tensor();  // (another input sharing its memory could be read there later)
  }
  return target;
}

void Program::find_constant_calls() {
  const ir::Graph& graph = description_.graph;
  constant_call_.assign(graph.nodes.size(), false);
  constant_results_.assign(graph.nodes.size(), {});
  std::vector<bool> is_output(graph.values.size(), false);
  for (ir::GraphValueId output : graph.outputs) is_output[output] = true;
  // A value some call may mutate (or return a view of, which it might then
  // mutate) must be made afresh each run.
  std::vector<bool> exposed(graph.values.size(), false);
  for (const ir::GraphNode& node : graph.nodes) {
    if (node.kind != ir::GraphNodeKind::kExtern || !node.has_side_effects) continue;
    for (ir::GraphValueId input : node.inputs) exposed[input] = true;
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::GraphNode& node = graph.nodes[n];
    if (node.kind != ir::GraphNodeKind::kExtern || !node.inputs.empty() || node.has_side_effects ||
        node.aliases_input || node.outputs.empty()) {
      continue;
    }
    if (!is_deterministic_factory(description_.calls[node.call].op->schema().name())) continue;
    bool kept_inside = true;
    for (ir::GraphValueId output : node.outputs) {
      if (output == ir::kNoValue || is_output[output] || exposed[output]) kept_inside = false;
    }
    constant_call_[n] = kept_inside;
  }
}

void Program::plan_memory(const std::vector<int>& last_read) {
  const ir::Graph& graph = description_.graph;
  // Values an extern call might return a view of (or mutate) stay out of the
  // arena: a view could outlive the run.
  std::vector<bool> excluded(graph.values.size(), false);
  for (const ir::GraphNode& node : graph.nodes) {
    if (node.kind != ir::GraphNodeKind::kExtern || !(node.aliases_input || node.has_side_effects)) continue;
    for (ir::GraphValueId input : node.inputs) excluded[input] = true;
  }
  std::vector<compiler::BufferRequest> requests;
  std::vector<ir::GraphValueId> planned;
  for (size_t s = 0; s < fusion_.steps.size(); ++s) {
    if (fusion_.steps[s].kind != compiler::ProgramStep::Kind::kKernel) continue;
    for (ir::GraphValueId value : fusion_.kernels[fusion_.steps[s].index].outputs) {
      if (excluded[value] || last_read[value] < 0) continue;  // last_read -1: a graph output
      const int64_t bytes = span_bytes(graph.values[value], description_.strides[value]);
      if (bytes == 0) continue;  // an empty tensor needs no arena bytes
      requests.push_back({static_cast<uint64_t>(bytes), static_cast<int32_t>(s), last_read[value]});
      planned.push_back(value);
    }
  }
  arena_offsets_.assign(graph.values.size(), -1);
  const compiler::MemoryPlan plan = compiler::plan_memory(requests);
  const std::string problem = compiler::check_memory_plan(requests, plan);
  TORCH_CHECK(problem.empty(), "kiln: the program's memory plan is invalid: ", problem);
  for (size_t i = 0; i < planned.size(); ++i) arena_offsets_[planned[i]] = static_cast<int64_t>(plan.offsets[i]);
  statistics_.arena_bytes = static_cast<int64_t>(plan.arena_bytes);
  statistics_.planned_bytes = static_cast<int64_t>(plan.naive_bytes);
}

c10::DimVector Program::strides_of(ir::GraphValueId value) const {
  const std::vector<int64_t>& strides = description_.strides[value];
  return strides.empty() ? c10::contiguous_strides(description_.graph.values[value].sizes)
                         : c10::DimVector(strides.begin(), strides.end());
}

at::Tensor Program::allocate(ir::GraphValueId value, const at::Tensor& arena) const {
  const ir::TensorValue& tensor = description_.graph.values[value];
  auto options = at::TensorOptions()
                     .dtype(compiled::to_scalar_type(tensor.dtype))
                     .device(c10::Device(c10::DeviceType::PrivateUse1, description_.device_index));
  const std::vector<int64_t>& strides = description_.strides[value];
  if (arena_offsets_[value] >= 0) {
    // A tensor on the arena's storage, made directly: empty() and set_() were
    // two dispatcher calls per stored value, a third of a kernel step's cost.
    const c10::DimVector layout = strides_of(value);
    at::Tensor slice = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(arena.storage()), arena.key_set(),
                                                                options.dtype());
    slice.unsafeGetTensorImpl()->set_sizes_and_strides(tensor.sizes, layout,
                                                       arena_offsets_[value] / ir::dtype_size(tensor.dtype));
    return slice;
  }
  if (strides.empty()) return at::empty(tensor.sizes, options);
  return at::empty_strided(tensor.sizes, strides, options);
}

void Program::bind_kernel(int index, const std::vector<compiled::RecordedLaunch>& recorded,
                          const std::vector<at::Tensor>& values, c10::ArrayRef<at::Tensor> outputs) const {
  std::unique_ptr<BoundLaunch> bound = BoundLaunch::bind(recorded, values, fusion_.kernels[index].inputs, outputs);
  if (bound == nullptr) return;
  std::lock_guard<std::mutex> lock(bind_mutex_);
  if (bound_[index].load(std::memory_order_relaxed) != nullptr) return;  // another run bound it first
  bound_storage_.push_back(std::move(bound));
  bound_[index].store(bound_storage_.back().get(), std::memory_order_release);
}

void Program::run_kernel(int index, std::vector<at::Tensor>& values, const at::Tensor& arena,
                         const std::vector<bool>& shared_inputs) const {
  const compiler::FusedKernel& kernel = fusion_.kernels[index];
  RECORD_FUNCTION(kernel_labels_[index], c10::ArrayRef<const c10::IValue>());
  c10::SmallVector<at::Tensor, 4> outputs;
  for (ir::GraphValueId output : kernel.outputs) {
    at::Tensor into = stores_into_inputs_ ? input_to_store_into(output, values, shared_inputs) : at::Tensor();
    values[output] = into.defined() ? std::move(into) : allocate(output, arena);
    outputs.push_back(values[output]);
  }
  const BoundLaunch* bound = bound_[index].load(std::memory_order_acquire);
  if (bound != nullptr && bound->matches(values, kernel.inputs)) {
    const char* name = fused_op_name(kernel.kind);
    record_static_op(name, OpPath::kCompiled);
    bound->launch(current_runtime_stream(description_.device_index), name, values, kernel.inputs, outputs);
    return;
  }
  std::vector<at::Tensor> inputs;
  inputs.reserve(kernel.inputs.size());
  for (ir::GraphValueId input : kernel.inputs) {
    const at::Tensor& value = values[input];
    // expand() is a dispatcher call: skip it when the sizes already match.
    inputs.push_back(value.sizes().equals(kernel.iteration_sizes) ? value : value.expand(kernel.iteration_sizes));
  }
  std::optional<compiled::LaunchRecording> recording;
  if (bound == nullptr) recording.emplace();
  if (kernel.kind == ir::KernelKind::kReduction) {
    launch_fused_reduction(kernel, kernel_keys_[index], inputs, outputs);
  } else if (kernel.kind == ir::KernelKind::kRow) {
    launch_fused_row(kernel, kernel_keys_[index], inputs, outputs);
  } else {
    launch_fused_pointwise(kernel, kernel_keys_[index], inputs, outputs);
  }
  if (recording.has_value()) bind_kernel(index, recording->launches(), values, outputs);
}

void Program::run_extern(int node, std::vector<at::Tensor>& values) const {
  const ExternCall& call = description_.calls[description_.graph.nodes[node].call];
  if (!constant_call_[node]) {
    call.run(values);
    return;
  }
  std::lock_guard<std::mutex> lock(constant_mutex_);
  std::vector<at::Tensor>& kept = constant_results_[node];
  if (kept.empty()) {
    call.run(values);
    // Later runs may read it from another stream: let the one write finish.
    check_status(current_runtime_stream(description_.device_index).synchronize());
    for (const ExternCall::Result& result : call.results) kept.push_back(values[result.value]);
    return;
  }
  for (size_t r = 0; r < call.results.size(); ++r) values[call.results[r].value] = kept[r];
}

std::vector<at::Tensor> Program::run(const std::vector<at::Tensor>& inputs) const {
  const ir::Graph& graph = description_.graph;
  TORCH_CHECK(inputs.size() == graph.inputs.size(), "kiln: the compiled graph takes ", graph.inputs.size(),
              " tensors, got ", inputs.size());
  RECORD_FUNCTION("kiln::compiled_program", c10::ArrayRef<const c10::IValue>());
  std::vector<at::Tensor> values(graph.values.size());
  const c10::Device device(c10::DeviceType::PrivateUse1, description_.device_index);
  std::vector<std::pair<size_t, at::Tensor>> moved;  // inputs that run as kiln copies, and the copies
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].device() != device) {
      values[graph.inputs[i]] = inputs[i].to(device);
      moved.emplace_back(i, values[graph.inputs[i]]);
    } else {
      values[graph.inputs[i]] = inputs[i];
    }
  }
  // An inline program on an idle stream runs whole in this thread (see
  // Stream::InlineRegion): its steps need no hand-off to the stream's worker,
  // and its library calls may use the OpenMP team of the process's initial
  // thread. Otherwise each step is launched as eager ops are, so the caller
  // can run ahead while the stream works.
  std::optional<Stream::InlineRegion> region;
  if (description_.run_inline) region.emplace(current_runtime_stream(description_.device_index));
  at::Tensor arena;
  if (statistics_.arena_bytes > 0) {
    arena = at::empty({statistics_.arena_bytes}, at::TensorOptions().dtype(at::kByte).device(
                                                     c10::Device(c10::DeviceType::PrivateUse1, description_.device_index)));
  }
  const std::vector<bool> shared = shared_inputs(values);
  for (size_t s = 0; s < fusion_.steps.size(); ++s) {
    const compiler::ProgramStep& step = fusion_.steps[s];
    if (step.kind == compiler::ProgramStep::Kind::kKernel) {
      run_kernel(step.index, values, arena, shared);
    } else {
      run_extern(step.index, values);
    }
    for (ir::GraphValueId value : releases_[s]) values[value] = at::Tensor();
  }
  std::vector<at::Tensor> outputs;
  outputs.reserve(graph.outputs.size());
  for (ir::GraphValueId output : graph.outputs) outputs.push_back(values[output]);
  const std::vector<int>& mutated = description_.mutated_inputs;
  for (const auto& [input, copy] : moved) {
    if (std::find(mutated.begin(), mutated.end(), static_cast<int>(input)) != mutated.end()) {
      inputs[input].copy_(copy);
    }
  }
  return outputs;
}

std::string Program::graph_text() const { return ir::print_graph(description_.graph); }

std::string Program::fusion_text() const { return compiler::print_fusion(description_.graph, fusion_); }

}  // namespace kiln::torch_integration::program
