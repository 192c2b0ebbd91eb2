#include "kiln/aten/program/program_function.h"

#include <ATen/Context.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/variable.h>

namespace kiln::torch_integration::program {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char* kSpecKey = "kiln_spec";
constexpr const char* kUncheckedKey = "kiln_unchecked";

std::vector<at::Tensor> program_inputs(c10::ArrayRef<at::Tensor> pool, const std::vector<int>& positions,
                                       const std::vector<at::Tensor>& constants) {
  std::vector<at::Tensor> inputs;
  inputs.reserve(positions.size() + constants.size());
  for (int position : positions) inputs.push_back(pool[position]);
  inputs.insert(inputs.end(), constants.begin(), constants.end());
  return inputs;
}

// Runs the forward (or inference) program on the graph's arguments; returns
// the forward graph's outputs, in order.
std::vector<at::Tensor> run_forward(const ProgramFunctionSpec& spec, c10::ArrayRef<at::Tensor> arguments) {
  std::vector<at::Tensor> results =
      spec.forward->run(program_inputs(arguments, spec.forward_positions, spec.forward_constants));
  std::vector<at::Tensor> outputs;
  outputs.reserve(spec.forward_results.size());
  for (int index : spec.forward_results) outputs.push_back(results[index]);  // an index may repeat
  return outputs;
}

// The gradient as the backward graph was traced to read it.
at::Tensor laid_out(const at::Tensor& gradient, const TangentLayout& layout) {
  if (layout.memory_format.has_value()) {
    const c10::MemoryFormat format = *layout.memory_format;
    return gradient.is_contiguous(format) ? gradient : gradient.contiguous(format);
  }
  if (gradient.sizes().equals(layout.sizes) && gradient.strides().equals(layout.strides)) return gradient;
  at::Tensor copy = at::empty_strided(layout.sizes, layout.strides, gradient.options());
  copy.copy_(gradient);
  return copy;
}

// Gradients computed under create_graph=True: they carry a node that raises
// if a second backward reaches it, as AOTAutograd's do.
void refuse_second_backward(variable_list& gradients) {
  auto refusal = c10::make_intrusive<torch::autograd::Error>(
      "kiln: a second backward through a torch.compile'd graph is not supported "
      "(torch.compile's AOTAutograd does not support double backward)");
  for (at::Tensor& gradient : gradients) {
    if (!gradient.defined()) continue;
    gradient = gradient.detach();
    torch::autograd::set_history(gradient, refusal);
  }
}

struct CompiledProgramFunction : torch::autograd::Function<CompiledProgramFunction> {
  static variable_list forward(AutogradContext* context, at::TensorList arguments,
                               const c10::intrusive_ptr<ProgramFunctionSpec>& spec) {
    std::vector<at::Tensor> graph_outputs = run_forward(*spec, arguments);
    auto graph_output = [&](int index) -> const at::Tensor& { return graph_outputs[index]; };
    // A saved view of an intermediate is saved detached: the backward reads
    // its values, and autograd must not track its base.
    int saved_index = 0;
    auto saved = [&](int index) {
      const at::Tensor& tensor = graph_output(index);
      const bool keep = spec->saved_is_graph_input[saved_index++] || !tensor.is_view();
      return keep ? tensor : tensor.detach();
    };
    variable_list checked;
    checked.reserve(spec->checked_end - spec->checked_begin);
    for (int index = spec->checked_begin; index < spec->checked_end; ++index) checked.push_back(saved(index));
    std::vector<at::Tensor> unchecked;
    unchecked.reserve(spec->unchecked_end - spec->unchecked_begin);
    for (int index = spec->unchecked_begin; index < spec->unchecked_end; ++index) unchecked.push_back(saved(index));
    context->save_for_backward(checked);
    context->saved_data[kUncheckedKey] = std::move(unchecked);
    context->saved_data[kSpecKey] = c10::IValue::make_capsule(spec);

    variable_list outputs;
    outputs.reserve(spec->outputs);
    for (int index = 0; index < spec->outputs; ++index) outputs.push_back(graph_output(index));
    if (!spec->non_differentiable.empty()) {
      variable_list without_gradient;
      for (int index : spec->non_differentiable) without_gradient.push_back(outputs[index]);
      context->mark_non_differentiable(without_gradient);
    }
    return outputs;
  }

  static variable_list backward(AutogradContext* context, variable_list gradients) {
    auto spec = c10::static_intrusive_pointer_cast<ProgramFunctionSpec>(context->saved_data[kSpecKey].toCapsule());
    TORCH_CHECK(!(spec->compiled_nondeterministic && at::globalContext().deterministicAlgorithms()),
                "kiln: this compiled backward runs with torch.use_deterministic_algorithms(True), but its "
                "forward was compiled while it was False");
    std::vector<at::Tensor> pool = context->get_saved_variables();
    for (const at::Tensor& tensor : context->saved_data[kUncheckedKey].toTensorVector()) pool.push_back(tensor);
    for (size_t j = 0; j < spec->tangent_outputs.size(); ++j) {
      pool.push_back(laid_out(gradients[spec->tangent_outputs[j]], spec->tangent_layouts[j]));
    }
    gradients.clear();  // the backward program holds what it still reads
    std::vector<at::Tensor> results =
        spec->backward->run(program_inputs(pool, spec->backward_positions, spec->backward_constants));
    pool.clear();
    // One gradient per forward argument, then none for the spec argument.
    variable_list input_gradients(spec->gradient_results.size() + 1);
    for (size_t i = 0; i < spec->gradient_results.size(); ++i) {
      if (spec->gradient_results[i] >= 0) input_gradients[i] = results[spec->gradient_results[i]];
    }
    if (torch::autograd::GradMode::is_enabled()) refuse_second_backward(input_gradients);
    return input_gradients;
  }
};

}  // namespace

std::vector<at::Tensor> run_program_function(const c10::intrusive_ptr<ProgramFunctionSpec>& spec,
                                             const std::vector<at::Tensor>& arguments) {
  for (int index : spec->mutated_arguments) {
    const at::Tensor& argument = arguments.at(index);
    if (!argument.is_inference()) torch::autograd::impl::bump_version(argument);
  }
  if (spec->backward == nullptr) {  // an inference graph: its program, without autograd
    c10::AutoGradMode no_gradient(false);
    std::vector<at::Tensor> outputs = run_forward(*spec, arguments);
    outputs.resize(spec->outputs);
    return outputs;
  }
  return CompiledProgramFunction::apply(at::TensorList(arguments), spec);
}

}  // namespace kiln::torch_integration::program
