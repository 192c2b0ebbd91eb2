// ExternCall: one node of a compiled graph that Kiln runs as an ATen op on the
// device (matmul and convolution on the library path, views, sorting, ...),
// called through the dispatcher with a stack built once at compile time.
//
// The stack holds every non-tensor argument already converted; the tensor
// arguments are graph values, put in place at each call. The op reaches
// Kiln's own kernel for it (or, with fallback="eager", the CPU fallback), so
// it is tracked and queued like the same op in eager mode.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <optional>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::torch_integration::program {

struct ExternCall {
  // Where graph values go in the stack.
  struct TensorArgument {
    enum class Kind : uint8_t { kSingle, kList, kOptionalList } kind = Kind::kSingle;
    int position = 0;                         // argument index in the schema
    std::vector<ir::GraphValueId> values;     // kNoValue: None (optional tensors)
  };
  // Where the op's results go: return `position`, element `list_index` of a
  // Tensor[] return (-1 for a Tensor return), into graph value `value`.
  struct Result {
    int position = 0;
    int list_index = -1;
    ir::GraphValueId value = ir::kNoValue;
  };

  // A view op whose layouts are known at compile time: run() makes the view
  // itself (no dispatcher call) when the base has `base_layout`.
  struct Layout {
    std::vector<int64_t> sizes;
    std::vector<int64_t> strides;
    int64_t storage_offset = 0;
  };
  struct StaticView {
    Layout base_layout;
    Layout view_layout;
  };

  // The matmul family (mm, addmm, bmm, baddbmm) whose operands qualify at
  // the call: run() calls the
  // library's out= kernel itself, skipping the dispatcher and ATen's
  // structured wrapper (which infers the output's meta, allocates the output
  // and dispatches again). And copy_ between two kiln tensors of one dtype
  // and shape (a graph writing back an input it updated: an optimizer's
  // parameters and state): run() calls Kiln's _copy_from and moves the
  // destination's version counter, as copy_ through the dispatcher would,
  // without its two dispatcher calls. Set by choose_direct().
  enum class Direct : uint8_t { kNone, kMm, kAddmm, kBmm, kBaddbmm, kCopy };

  std::optional<c10::OperatorHandle> op;
  Direct direct = Direct::kNone;
  std::optional<StaticView> static_view;  // cleared for views that are graph outputs
  std::string label;         // "aten::mm", for errors
  std::string source_line;   // the user's line that made the node, for errors
  torch::jit::Stack arguments;
  std::vector<TensorArgument> tensor_arguments;
  std::vector<Result> results;

  // Calls the op on `values`, writing its results into `values`. An error of
  // the op is raised with the node and the user's source line added.
  void run(std::vector<at::Tensor>& values) const;

  // Sets `direct` from `op` (call once `op` and `arguments` are set).
  void choose_direct();

 private:
  // The direct call of `direct`; false (nothing run) when an operand does not
  // qualify, and the dispatcher then raises or runs the op as usual.
  bool run_direct(std::vector<at::Tensor>& values) const;
  bool run_direct_copy(std::vector<at::Tensor>& values) const;
};

}  // namespace kiln::torch_integration::program
