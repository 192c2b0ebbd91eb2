#include "kiln/compiler/passes/dead_code.h"

#include <vector>

namespace kiln::compiler {

int eliminate_dead_code(ir::Graph& graph) {
  std::vector<bool> needed(graph.values.size(), false);
  for (ir::GraphValueId output : graph.outputs) needed[output] = true;
  std::vector<bool> keep(graph.nodes.size(), false);
  // Walk backwards: a node is kept when one of its results is needed (or it
  // has side effects); its inputs are then needed.
  for (size_t n = graph.nodes.size(); n-- > 0;) {
    ir::GraphNode& node = graph.nodes[n];
    bool used = node.has_side_effects;
    for (ir::GraphValueId& output : node.outputs) {
      if (output == ir::kNoValue) continue;
      if (needed[output]) {
        used = true;
      } else if (node.kind == ir::GraphNodeKind::kExtern) {
        output = ir::kNoValue;  // an unread result of a kept call
      }
    }
    if (!used) continue;
    keep[n] = true;
    for (ir::GraphValueId input : node.inputs) needed[input] = true;
  }
  std::vector<ir::GraphNode> kept;
  kept.reserve(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (keep[n]) kept.push_back(std::move(graph.nodes[n]));
  }
  const int removed = static_cast<int>(graph.nodes.size() - kept.size());
  graph.nodes = std::move(kept);
  return removed;
}

}  // namespace kiln::compiler
