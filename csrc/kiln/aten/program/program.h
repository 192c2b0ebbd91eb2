// Program: one compiled graph of torch.compile, ready to run.
//
// Made once per graph (and input shapes): dead code elimination and fusion
// run on the Graph, then every run launches the fused kernels and the extern
// calls in order on the current stream and returns at once; the device works
// through the queue as in eager mode. Values are released after their last
// reader, so the caching allocator reuses their memory within the run.
//
// Thread-safety: run() may be called from several threads; each run has its
// own values.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "kiln/aten/program/extern_call.h"
#include "kiln/compiler/passes/fusion.h"
#include "kiln/ir/graph.h"

namespace kiln::torch_integration::program {

struct ProgramDescription {
  ir::Graph graph;
  std::vector<ExternCall> calls;             // graph node `call` indices point here
  std::vector<std::vector<int64_t>> strides;  // per value: the layout to allocate (empty: contiguous)
  int device_index = 0;
};

struct ProgramStatistics {
  int nodes = 0;            // graph nodes before dead code elimination
  int removed_nodes = 0;    // nodes dead code elimination removed
  int kernels = 0;          // fused kernels
  int fused_nodes = 0;      // pointwise and reduction nodes inside them
  int extern_calls = 0;     // steps that call an ATen op
  int64_t stored_values = 0;    // values the kernels write to memory
  int64_t unstored_values = 0;  // values computed inside kernels and never stored
};

class Program {
 public:
  explicit Program(ProgramDescription description);

  // Runs the program on `inputs` (one per graph input, in order). Returns one
  // tensor per graph output.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) const;

  const ProgramStatistics& statistics() const { return statistics_; }
  // The graph after dead code elimination, and the kernels and steps, as text.
  std::string graph_text() const;
  std::string fusion_text() const;

 private:
  void run_kernel(int index, std::vector<at::Tensor>& values) const;
  at::Tensor allocate(ir::GraphValueId value) const;

  ProgramDescription description_;
  compiler::FusionResult fusion_;
  std::vector<std::string> kernel_keys_;              // per kernel, its signature key
  std::vector<std::vector<ir::GraphValueId>> releases_;  // per step, values last read there
  ProgramStatistics statistics_;
};

}  // namespace kiln::torch_integration::program
