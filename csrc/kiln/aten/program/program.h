// Program: one compiled graph of torch.compile, ready to run.
//
// Made once per graph (and input shapes): dead code elimination, fusion and
// the static memory plan run on the Graph, then every run launches the fused
// kernels and the extern calls in order on the current stream. A program with
// `run_inline` (inference) runs whole in the caller when the stream is idle;
// otherwise steps are launched as eager ops are and the run returns while the
// device works through the queue. Each fused kernel's launch is bound on its
// first run and replayed later (bound_launch.h).
//
// Memory: the values kernels store and only the program reads live in one
// arena per run, at the offsets of the memory plan (two values whose steps of
// life do not meet share bytes; the stream runs steps in order, so a later
// step never overwrites what an earlier one still reads). Graph outputs, and
// values an extern call may return a view of, get their own allocations.
// Every value is released after its last reader.
//
// Thread-safety: run() may be called from several threads; each run has its
// own values.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/DimVector.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kiln/aten/program/bound_launch.h"
#include "kiln/aten/program/extern_call.h"
#include "kiln/compiler/passes/fusion.h"
#include "kiln/ir/graph.h"

namespace kiln::torch_integration::program {

struct ProgramDescription {
  ir::Graph graph;
  std::vector<ExternCall> calls;             // graph node `call` indices point here
  std::vector<std::vector<int64_t>> strides;  // per value: the layout to allocate (empty: contiguous)
  int device_index = 0;
  // Run whole in the caller when the stream is idle (program.cc). The backend
  // sets it for inference graphs, whose results are read right away; training
  // graphs are queued step by step, so the caller's Python (loss, optimizer)
  // overlaps with the device's work.
  bool run_inline = true;
  // Graph inputs (indices into graph.inputs) the graph writes in place. An
  // input on another device runs as a kiln copy; these are copied back.
  std::vector<int> mutated_inputs;
  // (value, input index): a pointwise result the graph ends by copying into
  // that input (a functionalized in-place update: an optimizer's parameters
  // and state). The kernel computing it may store it into the input itself,
  // and the copy then has nothing to do; see choose_outputs_into_inputs.
  std::vector<std::pair<ir::GraphValueId, int>> output_into_input;
};

struct ProgramStatistics {
  int nodes = 0;            // graph nodes before dead code elimination
  int removed_nodes = 0;    // nodes dead code elimination removed
  int kernels = 0;          // fused kernels
  int fused_nodes = 0;      // pointwise and reduction nodes inside them
  int extern_calls = 0;     // steps that call an ATen op
  int64_t stored_values = 0;    // values the kernels write to memory
  int64_t unstored_values = 0;  // values computed inside kernels and never stored
  int64_t arena_bytes = 0;      // the memory plan's arena
  int64_t planned_bytes = 0;    // the planned values' bytes without reuse
};

class Program {
 public:
  explicit Program(ProgramDescription description);

  // Runs the program on `inputs` (one per graph input, in order). Returns one
  // tensor per graph output. An input on another device (an optimizer's CPU
  // step counter) runs as a kiln copy, written back if the graph mutates it.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) const;

  const ProgramStatistics& statistics() const { return statistics_; }
  // The graph as handed over, the graph after dead code elimination, and the
  // kernels and steps, as text (KILN_DUMP_DIR's stages).
  const std::string& input_graph_text() const { return input_graph_text_; }
  std::string graph_text() const;
  std::string fusion_text() const;

 private:
  void run_kernel(int index, std::vector<at::Tensor>& values, const at::Tensor& arena,
                  const std::vector<bool>& shared_inputs) const;
  void run_extern(int node, std::vector<at::Tensor>& values) const;
  void find_constant_calls();
  void bind_kernel(int index, const std::vector<compiled::RecordedLaunch>& recorded,
                   const std::vector<at::Tensor>& values, c10::ArrayRef<at::Tensor> outputs) const;
  at::Tensor allocate(ir::GraphValueId value, const at::Tensor& arena) const;
  // The strides `value` is allocated with (its description's, or contiguous).
  c10::DimVector strides_of(ir::GraphValueId value) const;
  void plan_memory(const std::vector<int>& last_read);
  void choose_outputs_into_inputs();
  // The input tensor `value` is stored into this run, or an undefined tensor.
  at::Tensor input_to_store_into(ir::GraphValueId value, const std::vector<at::Tensor>& values,
                                 const std::vector<bool>& shared_inputs) const;
  // Per graph input: whether another input shares its storage (this run).
  std::vector<bool> shared_inputs(const std::vector<at::Tensor>& values) const;

  ProgramDescription description_;
  std::string input_graph_text_;
  compiler::FusionResult fusion_;
  std::vector<std::string> kernel_keys_;              // per kernel, its signature key
  std::vector<std::string> kernel_labels_;            // per kernel, its name in torch.profiler
  std::vector<std::vector<ir::GraphValueId>> releases_;  // per step, values last read there
  std::vector<int64_t> arena_offsets_;                   // per value: bytes into the arena, or -1
  std::vector<int> into_input_;                          // per value: the input it is stored into, or -1
  bool stores_into_inputs_ = false;                      // some value of into_input_ is not -1
  ProgramStatistics statistics_;
  // Per kernel, its launch as bound by its first run (null until then, or
  // when it cannot be bound); written once under bind_mutex_, then read freely.
  std::unique_ptr<std::atomic<const BoundLaunch*>[]> bound_;
  mutable std::mutex bind_mutex_;
  mutable std::vector<std::unique_ptr<BoundLaunch>> bound_storage_;
  // Per graph node: whether it is a factory call with no tensor inputs
  // (arange, full, ...) whose results the program reads only itself, so the
  // first run's results serve every run; and those results, once made.
  std::vector<bool> constant_call_;
  mutable std::mutex constant_mutex_;
  mutable std::vector<std::vector<at::Tensor>> constant_results_;
};

}  // namespace kiln::torch_integration::program
