// Dead code elimination on a Graph: removes the nodes none of whose results
// reach a graph output, except extern calls with side effects. Results nobody
// reads become kNoValue. Values keep their ids (removed ones are just unused).
#pragma once

#include "kiln/ir/graph.h"

namespace kiln::compiler {

// Returns how many nodes were removed.
int eliminate_dead_code(ir::Graph& graph);

}  // namespace kiln::compiler
