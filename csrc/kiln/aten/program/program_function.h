// ProgramFunction: a compiled training graph's forward and backward programs
// as one autograd function, called without Python.
//
// AOTAutograd splits a training graph into a forward and a backward graph and
// wraps the two compiled callables in a Python autograd.Function with Python
// prologues and epilogues around each (input mutations, aliased outputs,
// tangent layouts, saved tensors). For a small model that wrapper costs about
// as much as the programs: leaving it saved about 70 us of the bundled MLP's
// compiled forward and as much of its backward (docs/history/performance-log.md). When a
// graph needs none of the wrapper's rarer duties, the backend (python/torch_kiln/compile/runtime/program_function.py)
// describes the little it does need in a ProgramFunctionSpec, and this C++
// autograd function does the same work: it runs the forward program, saves the
// tensors the backward graph reads, marks outputs that need no gradient, and
// in backward lays the gradients out as the backward graph was traced and runs
// the backward program, in C++ on whichever thread autograd runs backward (by
// default the calling one, KILN_AUTOGRAD_THREAD), without the GIL.
//
// An inference graph's spec has no backward program: a call runs the one
// program under no_grad and returns its outputs, as AOTAutograd's inference
// wrapper does.
//
// What it does as AOTAutograd does (runtime_wrappers.py, torch 2.14):
// - arguments the graph writes in place have their versions moved first;
// - saved tensors are split into those whose version is checked when backward
//   reads them and those that are not; a saved view that is not a graph input
//   is saved detached;
// - a missing gradient for an output that needs one is zeros of its shape;
// - a gradient whose layout differs from the traced tangent's is copied into
//   that layout (the traced memory format, or the exact sizes and strides);
// - backward under torch.use_deterministic_algorithms(True) is refused when
//   the forward was compiled without it;
// - with create_graph=True the gradients carry a node that refuses a second
//   backward, which compiled graphs do not support.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/MemoryFormat.h>

#include <memory>
#include <optional>
#include <vector>

#include "kiln/aten/program/program.h"

namespace kiln::torch_integration::program {

// The layout the backward graph was traced with for one tangent.
struct TangentLayout {
  // Set: any tensor contiguous in this memory format. Unset: exactly `sizes`
  // and `strides`.
  std::optional<c10::MemoryFormat> memory_format;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

struct ProgramFunctionSpec : torch::CustomClassHolder {
  std::shared_ptr<const Program> forward;   // or the inference program
  std::shared_ptr<const Program> backward;  // null for an inference graph
  // The forward program's inputs: arguments at these positions, then the
  // constants. Its results at forward_results are the forward graph's
  // outputs: the user's outputs, then the tensors saved for backward.
  std::vector<int> forward_positions;
  std::vector<at::Tensor> forward_constants;
  std::vector<int> forward_results;
  // Arguments the forward program writes in place (batch norm's running
  // statistics): their version counters move before it runs, as
  // AOTAutograd moves them for mutations it leaves inside the graph.
  std::vector<int> mutated_arguments;
  int outputs = 0;
  // Saved tensors: forward graph outputs [checked_begin, checked_end) have
  // their versions checked, [unchecked_begin, unchecked_end) do not.
  int checked_begin = 0;
  int checked_end = 0;
  int unchecked_begin = 0;
  int unchecked_end = 0;
  std::vector<bool> saved_is_graph_input;  // per saved tensor, checked ones first
  std::vector<int> non_differentiable;     // user outputs that need no gradient
  // The user outputs whose gradients the backward graph takes, in its order,
  // and the layout each was traced with.
  std::vector<int> tangent_outputs;
  std::vector<TangentLayout> tangent_layouts;
  // The backward program's inputs: positions into (saved tensors, tangents),
  // then the constants. Per forward argument, the index of its gradient in the
  // backward program's results, or -1 (no gradient).
  std::vector<int> backward_positions;
  std::vector<at::Tensor> backward_constants;
  std::vector<int> gradient_results;
  // The forward was compiled with deterministic algorithms off.
  bool compiled_nondeterministic = false;
};

// Runs `spec`'s forward program on `arguments` (the graph's inputs, as Dynamo
// passes them) under autograd, or its inference program without; returns
// the user's outputs.
std::vector<at::Tensor> run_program_function(const c10::intrusive_ptr<ProgramFunctionSpec>& spec,
                                             const std::vector<at::Tensor>& arguments);

}  // namespace kiln::torch_integration::program
