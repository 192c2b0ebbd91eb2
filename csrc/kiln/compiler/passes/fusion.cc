#include "kiln/compiler/passes/fusion.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace kiln::compiler {
namespace {

using ir::GraphNode;
using ir::GraphNodeKind;
using ir::GraphValueId;

struct Group {
  ir::KernelKind kind = ir::KernelKind::kPointwise;
  std::vector<int64_t> sizes;  // pointwise: output sizes; reduction, row: the reduced input's
  std::vector<int> nodes;      // in graph order
  int reduction_node = -1;     // reduction and row groups: the (first) node folding
  std::vector<int> reduced_dims;  // reduction and row groups
  bool sealed = false;         // something outside reads its values: it takes no more nodes
};

// True for fragment ops a row kernel computes: none that reads a position of
// its own (coordinates, linear index, random bits, indexed loads).
bool positionless(const std::vector<ir::Node>& fragment) {
  for (const ir::Node& node : fragment) {
    switch (node.op) {
      case ir::OpCode::kCoordinate: case ir::OpCode::kLinearIndex: case ir::OpCode::kRandomBits:
      case ir::OpCode::kIndexedLoad: case ir::OpCode::kAccumulatorIndex:
        return false;
      default:
        break;
    }
  }
  return true;
}

class Fuser {
 public:
  explicit Fuser(const ir::Graph& graph) : graph_(graph) {
    producer_.assign(graph.values.size(), -1);
    readers_.resize(graph.values.size());
    is_output_.assign(graph.values.size(), false);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      for (GraphValueId output : graph.nodes[n].outputs) {
        if (output != ir::kNoValue) producer_[output] = static_cast<int>(n);
      }
      for (GraphValueId input : graph.nodes[n].inputs) readers_[input].push_back(static_cast<int>(n));
    }
    for (GraphValueId output : graph.outputs) is_output_[output] = true;
    group_of_.assign(graph.nodes.size(), -1);
    row_value_.assign(graph.nodes.size(), false);
  }

  FusionResult run() {
    for (size_t n = 0; n < graph_.nodes.size(); ++n) place(static_cast<int>(n));
    FusionResult result;
    std::map<int, ProgramStep> steps_by_position;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].nodes.empty()) continue;  // merged into another
      steps_by_position[groups_[g].nodes.back()] = {ProgramStep::Kind::kKernel,
                                                    static_cast<int>(result.kernels.size())};
      result.kernels.push_back(build_kernel(groups_[g]));
    }
    for (int n : externs_) steps_by_position[n] = {ProgramStep::Kind::kExtern, n};
    for (auto& [position, step] : steps_by_position) result.steps.push_back(step);
    return result;
  }

 private:
  int group_of_value(GraphValueId value) const {
    const int node = producer_[value];
    return node < 0 ? -1 : group_of_[node];
  }

  void seal_producers(const GraphNode& node, int except_group) {
    for (GraphValueId input : node.inputs) {
      const int group = group_of_value(input);
      if (group >= 0 && group != except_group) groups_[group].sealed = true;
    }
  }

  int new_group(int node, ir::KernelKind kind, std::vector<int64_t> sizes) {
    groups_.push_back({kind, std::move(sizes), {node}, kind == ir::KernelKind::kReduction ? node : -1, {}});
    group_of_[node] = static_cast<int>(groups_.size() - 1);
    return group_of_[node];
  }

  // The operands (inputs read from memory plus values stored) a kernel of
  // `group`'s nodes and `extra` would have, counting as stored every value
  // with a reader outside them: later joins can only lower that.
  size_t operand_count(const Group& group, int extra) const {
    std::vector<int> members = group.nodes;
    members.push_back(extra);
    return operand_count(members);
  }

  size_t operand_count(const std::vector<int>& members) const {
    auto member = [&](int node) { return std::find(members.begin(), members.end(), node) != members.end(); };
    std::vector<GraphValueId> inputs;
    size_t stored = 0;
    for (int n : members) {
      for (GraphValueId input : graph_.nodes[n].inputs) {
        if (!member(producer_[input]) && std::find(inputs.begin(), inputs.end(), input) == inputs.end()) {
          inputs.push_back(input);
        }
      }
      const GraphValueId output = graph_.nodes[n].outputs[0];
      bool outside = is_output_[output];
      for (int user : readers_[output]) outside = outside || !member(user);
      stored += outside ? 1 : 0;
    }
    return inputs.size() + stored;
  }

  bool fits_operands(int group, int extra) const {
    return operand_count(groups_[group], extra) <= static_cast<size_t>(ir::kMaxOperands);
  }

  void join(int node, int group) {
    groups_[group].nodes.push_back(node);
    group_of_[node] = group;
  }

  // Moves the nodes of open pointwise group `from` into `into`, keeping graph
  // order; `from` is left empty and builds no kernel. Legal for an open group:
  // nothing outside it has read its values yet, so computing them later, at
  // `into`'s place, changes nothing another step sees.
  void merge(int from, int into) {
    std::vector<int>& nodes = groups_[into].nodes;
    for (int node : groups_[from].nodes) group_of_[node] = into;
    nodes.insert(nodes.end(), groups_[from].nodes.begin(), groups_[from].nodes.end());
    std::sort(nodes.begin(), nodes.end());
    groups_[from].nodes.clear();
    groups_[from].sealed = true;
  }

  void place(int n) {
    const GraphNode& node = graph_.nodes[n];
    switch (node.kind) {
      case GraphNodeKind::kExtern:
        seal_producers(node, -1);
        // A call with side effects may write what an open kernel read (through
        // any alias). A node joining that kernel later would move the kernel
        // after the call, so every open kernel closes here.
        if (node.has_side_effects) {
          for (Group& group : groups_) group.sealed = true;
        }
        externs_.push_back(n);
        return;
      case GraphNodeKind::kReduction:
        place_reduction(n);
        return;
      case GraphNodeKind::kPointwise:
        place_pointwise(n);
        return;
    }
  }

  // True when every value of `group` is read only by its own nodes or `reader`.
  bool read_only_inside(const Group& group, int reader) const {
    for (int member : group.nodes) {
      for (GraphValueId value : graph_.nodes[member].outputs) {
        if (value == ir::kNoValue) continue;
        if (is_output_[value]) return false;
        for (int user : readers_[value]) {
          if (user != reader && group_of_[user] != group_of_[member]) return false;
        }
      }
    }
    return true;
  }

  void place_reduction(int n) {
    const GraphNode& node = graph_.nodes[n];
    const std::vector<int64_t>& input_sizes = graph_.values[node.inputs[0]].sizes;
    const int producer = group_of_value(node.inputs[0]);
    row_value_[n] = true;
    if (producer >= 0) {
      Group& group = groups_[producer];
      // A pointwise producer only this reduction reads becomes its prologue;
      // otherwise a row kernel may take the reduction in as a stage.
      const bool prologue = !group.sealed && group.kind == ir::KernelKind::kPointwise && group.sizes == input_sizes &&
                            read_only_inside(group, n) && fits_operands(producer, n);
      if (prologue || takes_stage(producer, n)) {
        if (group.kind == ir::KernelKind::kPointwise) {
          group.reduction_node = n;
          group.reduced_dims = node.reduced_dims;
        }
        group.kind = prologue ? ir::KernelKind::kReduction : ir::KernelKind::kRow;
        // The kernels of its other inputs now have a reader outside: a node
        // joining one later would move it after this kernel, which reads it.
        seal_producers(node, producer);
        join(n, producer);
        return;
      }
    }
    seal_producers(node, -1);
    const int group = new_group(n, ir::KernelKind::kReduction, input_sizes);
    groups_[group].reduced_dims = node.reduced_dims;
  }

  // True when rows of `sizes` reduced over `dims` suit a row kernel: `dims`
  // are the last dims, and the rows suit one (row_kernel_policy.h).
  static bool row_shape(const std::vector<int64_t>& sizes, const std::vector<int>& dims) {
    const int rank = static_cast<int>(sizes.size());
    int64_t row = 1, rows = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] != rank - static_cast<int>(dims.size()) + static_cast<int>(i)) return false;
    }
    for (int dim = 0; dim < rank; ++dim) {
      (dim >= rank - static_cast<int>(dims.size()) ? row : rows) *= sizes[dim];
    }
    return !dims.empty() && suits_row_kernel(rows, row);
  }

  bool group_positionless(const Group& group) const {
    for (int member : group.nodes) {
      const GraphNode& node = graph_.nodes[member];
      if (!positionless(node.expression) || !positionless(node.epilogue)) return false;
    }
    return true;
  }

  // True when reduction `n` can be a row kernel's stage in open group
  // `group`: the group computes its input as an element value (a pointwise
  // kernel of the input's sizes, or a reduction or row kernel over the same
  // rows), whatever else reads the group's values.
  bool takes_stage(int group, int n) const {
    const GraphNode& node = graph_.nodes[n];
    const Group& candidate = groups_[group];
    const std::vector<int64_t>& input_sizes = graph_.values[node.inputs[0]].sizes;
    if (candidate.sealed || node.inputs.size() != 1 || candidate.sizes != input_sizes ||
        !row_shape(input_sizes, node.reduced_dims) || !positionless(node.expression) ||
        !positionless(node.epilogue) || !group_positionless(candidate) || !fits_operands(group, n)) {
      return false;
    }
    if (candidate.kind == ir::KernelKind::kPointwise) return true;
    return candidate.reduced_dims == node.reduced_dims && !row_value_[producer_[node.inputs[0]]];
  }

  // True when `node` reads only the reduction result or epilogue values of
  // reduction group `group`, and has that result's sizes.
  // For a row group: every input is a row value of the group, of the node's
  // own sizes.
  bool fits_epilogue(const GraphNode& node, int group) const {
    const Group& candidate = groups_[group];
    if (candidate.sealed || candidate.kind == ir::KernelKind::kPointwise || node.inputs.empty()) return false;
    if (candidate.kind == ir::KernelKind::kRow && !positionless(node.expression)) return false;
    const GraphNode& reduction = graph_.nodes[candidate.reduction_node];
    const std::vector<int64_t>& sizes = graph_.values[node.outputs[0]].sizes;
    if (candidate.kind == ir::KernelKind::kReduction && sizes != graph_.values[reduction.outputs[0]].sizes) {
      return false;
    }
    for (GraphValueId input : node.inputs) {
      const int producer = producer_[input];
      if (producer < 0 || group_of_[producer] != group || !row_value_[producer]) return false;
      if (graph_.values[input].sizes != sizes) return false;
    }
    return true;
  }

  // The open reduction or row group over rows of `node`'s output sizes that
  // `node` can join as an element value (the latest, when several can), or
  // -1. The node reads at least one element value (the group's or another
  // tensor), and each row value it reads keeps the reduced dims with size 1,
  // so it broadcasts along the row.
  int row_group_for_element(int n) const {
    const GraphNode& node = graph_.nodes[n];
    const std::vector<int64_t>& sizes = graph_.values[node.outputs[0]].sizes;
    if (!positionless(node.expression)) return -1;
    int chosen = -1;
    for (GraphValueId input : node.inputs) {
      const int group = group_of_value(input);
      if (group < 0 || group <= chosen) continue;
      const Group& candidate = groups_[group];
      if (candidate.sealed || candidate.kind == ir::KernelKind::kPointwise || candidate.sizes != sizes ||
          !row_shape(sizes, candidate.reduced_dims) || !group_positionless(candidate)) {
        continue;
      }
      std::vector<int64_t> row_value_sizes = sizes;
      for (int dim : candidate.reduced_dims) row_value_sizes[dim] = 1;
      bool reads_element = false, fits = true;
      for (GraphValueId other : node.inputs) {
        const int producer = producer_[other];
        const bool row_value = producer >= 0 && group_of_[producer] == group && row_value_[producer];
        if (row_value) fits = fits && graph_.values[other].sizes == row_value_sizes;
        else reads_element = true;
      }
      if (fits && reads_element && fits_operands(group, n)) chosen = group;
    }
    return chosen;
  }

  void place_pointwise(int n) {
    const GraphNode& node = graph_.nodes[n];
    const std::vector<int64_t>& sizes = graph_.values[node.outputs[0]].sizes;
    int chosen = -1;
    if (!node.inputs.empty()) {
      const int first = group_of_value(node.inputs[0]);
      if (first >= 0 && fits_epilogue(node, first) && fits_operands(first, n)) {
        chosen = first;
        row_value_[n] = true;
      }
    }
    if (chosen < 0) {
      chosen = row_group_for_element(n);
      if (chosen >= 0) groups_[chosen].kind = ir::KernelKind::kRow;
    }
    if (chosen < 0) {
      for (GraphValueId input : node.inputs) {
        const int group = group_of_value(input);
        if (group < 0 || groups_[group].sealed || groups_[group].kind != ir::KernelKind::kPointwise) continue;
        if (groups_[group].sizes == sizes && graph_.values[input].sizes == sizes && group > chosen &&
            fits_operands(group, n)) {
          chosen = group;
        }
      }
    }
    if (chosen >= 0 && groups_[chosen].kind == ir::KernelKind::kPointwise) {
      // Other open kernels of the same shape that this node reads join it
      // too, so independent parts of one expression (a > b and isnan(a),
      // then their or) become one kernel instead of sealing each other.
      for (GraphValueId input : node.inputs) {
        const int group = group_of_value(input);
        if (group < 0 || group == chosen || groups_[group].sealed ||
            groups_[group].kind != ir::KernelKind::kPointwise || groups_[group].sizes != sizes ||
            graph_.values[input].sizes != sizes) {
          continue;
        }
        std::vector<int> members = groups_[chosen].nodes;
        members.insert(members.end(), groups_[group].nodes.begin(), groups_[group].nodes.end());
        members.push_back(n);
        if (operand_count(members) <= static_cast<size_t>(ir::kMaxOperands)) merge(group, chosen);
      }
    }
    seal_producers(node, chosen);
    if (chosen >= 0) {
      join(n, chosen);
    } else {
      new_group(n, ir::KernelKind::kPointwise, sizes);
    }
  }

  bool read_outside(GraphValueId value, int group) const {
    if (is_output_[value]) return true;
    for (int user : readers_[value]) {
      if (group_of_[user] != group) return true;
    }
    return false;
  }

  // Appends `fragment` (of graph node `node`) to `out`, turning loads of values
  // already computed in `local` into references and the others into kernel
  // inputs. Returns the index of the fragment's result in `out`.
  ir::ValueId append_fragment(const std::vector<ir::Node>& fragment, const GraphNode& node,
                              std::unordered_map<GraphValueId, ir::ValueId>& local,
                              std::vector<ir::Node>& out, FusedKernel& kernel) {
    std::vector<ir::ValueId> remap(fragment.size(), ir::kNoValue);
    for (size_t i = 0; i < fragment.size(); ++i) {
      ir::Node copy = fragment[i];
      if (copy.op == ir::OpCode::kLoad) {
        const GraphValueId value = node.inputs[copy.integer];
        if (auto found = local.find(value); found != local.end()) {
          remap[i] = found->second;
          continue;
        }
        auto position = std::find(kernel.inputs.begin(), kernel.inputs.end(), value);
        if (position == kernel.inputs.end()) position = kernel.inputs.insert(kernel.inputs.end(), value);
        copy.integer = position - kernel.inputs.begin();
      } else {
        const int arity = ir::opcode_arity(copy.op);
        for (int a = 0; a < arity; ++a) copy.args[a] = remap[copy.args[a]];
      }
      remap[i] = static_cast<ir::ValueId>(out.size());
      out.push_back(copy);
    }
    return remap.back();
  }

  // A row group's kernel: one expression, each reduction's epilogue reading
  // its own stage.
  FusedKernel build_row_kernel(const Group& group) {
    FusedKernel kernel;
    kernel.kind = ir::KernelKind::kRow;
    kernel.nodes = group.nodes;
    kernel.iteration_sizes = group.sizes;
    kernel.reduced_dims = group.reduced_dims;
    const int group_index = group_of_[group.nodes.front()];
    std::unordered_map<GraphValueId, ir::ValueId> local;
    for (int n : group.nodes) {
      const GraphNode& node = graph_.nodes[n];
      const GraphValueId output = node.outputs[0];
      if (node.kind == GraphNodeKind::kReduction) {
        kernel.stage_values.push_back(append_fragment(node.expression, node, local, kernel.expression, kernel));
        kernel.stage_ops.push_back(node.reduce_op);
        std::vector<ir::Node> epilogue = node.epilogue;
        for (ir::Node& entry : epilogue) {
          if (entry.op == ir::OpCode::kAccumulator) entry.integer = static_cast<int64_t>(kernel.stage_ops.size()) - 1;
        }
        std::unordered_map<GraphValueId, ir::ValueId> none;
        local[output] = append_fragment(epilogue, node, none, kernel.expression, kernel);
      } else {
        local[output] = append_fragment(node.expression, node, local, kernel.expression, kernel);
      }
      if (read_outside(output, group_index)) {
        kernel.outputs.push_back(output);
        kernel.results.push_back(local[output]);
      }
    }
    return kernel;
  }

  FusedKernel build_kernel(const Group& group) {
    if (group.kind == ir::KernelKind::kRow) return build_row_kernel(group);
    FusedKernel kernel;
    kernel.kind = group.kind;
    kernel.nodes = group.nodes;
    kernel.iteration_sizes = group.sizes;
    const int group_index = group_of_[group.nodes.front()];
    std::unordered_map<GraphValueId, ir::ValueId> local;     // values in `expression`
    std::unordered_map<GraphValueId, ir::ValueId> finished;  // values in `epilogue`
    for (int n : group.nodes) {
      const GraphNode& node = graph_.nodes[n];
      const GraphValueId output = node.outputs[0];
      if (node.kind == GraphNodeKind::kReduction) {
        kernel.reduced_value = append_fragment(node.expression, node, local, kernel.expression, kernel);
        kernel.reduce_op = node.reduce_op;
        kernel.reduced_dims = node.reduced_dims;
        std::unordered_map<GraphValueId, ir::ValueId> none;
        finished[output] = append_fragment(node.epilogue, node, none, kernel.epilogue, kernel);
      } else if (group.reduction_node >= 0 && n > group.reduction_node) {
        finished[output] = append_fragment(node.expression, node, finished, kernel.epilogue, kernel);
      } else {
        local[output] = append_fragment(node.expression, node, local, kernel.expression, kernel);
      }
      if (read_outside(output, group_index)) {
        kernel.outputs.push_back(output);
        kernel.results.push_back(group.reduction_node >= 0 && n >= group.reduction_node ? finished[output]
                                                                                          : local[output]);
      }
    }
    return kernel;
  }

  const ir::Graph& graph_;
  std::vector<int> producer_;
  std::vector<std::vector<int>> readers_;
  std::vector<bool> is_output_;
  std::vector<int> group_of_;
  std::vector<bool> row_value_;  // per node: a reduction's result or a value computed from such results only
  std::vector<Group> groups_;
  std::vector<int> externs_;
};

}  // namespace

FusionResult fuse(const ir::Graph& graph) { return Fuser(graph).run(); }

std::string print_fusion(const ir::Graph& graph, const FusionResult& fusion) {
  std::string text;
  auto values = [](const std::vector<ir::GraphValueId>& list) {
    std::string out;
    for (size_t i = 0; i < list.size(); ++i) out += (i ? ", v" : "v") + std::to_string(list[i]);
    return out;
  };
  for (const ProgramStep& step : fusion.steps) {
    if (step.kind == ProgramStep::Kind::kExtern) {
      const ir::GraphNode& node = graph.nodes[step.index];
      text += "extern " + node.label + "(" + values(node.inputs) + ")\n";
      continue;
    }
    const FusedKernel& kernel = fusion.kernels[step.index];
    const char* kinds[] = {"pointwise", "reduction", "row"};
    text += std::string(kinds[static_cast<int>(kernel.kind)]) +
            " kernel " + std::to_string(step.index) + " (" + std::to_string(kernel.nodes.size()) +
            " nodes): (" + values(kernel.inputs) + ") -> (" + values(kernel.outputs) + ")\n    " +
            ir::print_fragment(kernel.expression) + "\n";
    for (size_t stage = 0; stage < kernel.stage_ops.size(); ++stage) {
      text += std::string("    stage ") + std::to_string(stage) + ": " + ir::reduce_op_name(kernel.stage_ops[stage]) +
              " %" + std::to_string(kernel.stage_values[stage]) + "\n";
    }
    if (kernel.kind == ir::KernelKind::kReduction) {
      text += std::string("    ") + ir::reduce_op_name(kernel.reduce_op) + " %" +
              std::to_string(kernel.reduced_value) + " then " +
              ir::print_fragment(kernel.epilogue) + "\n";
    }
  }
  return text;
}

}  // namespace kiln::compiler
