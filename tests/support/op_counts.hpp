// How many ops of a type a graph holds, for tests of what an import or a pass built.
#pragma once

#include "frontend/ir/graph.hpp"

namespace tpusim::testing {

inline int countOps(const ir::Graph& graph, ir::OpType type) {
  int count = 0;
  for (const ir::Op& op : graph.ops()) count += op.type == type ? 1 : 0;
  return count;
}

}  // namespace tpusim::testing
