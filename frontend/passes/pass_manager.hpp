// Runs the compiler's Graph -> Graph passes in order, timing each, and prints
// the IR after the passes asked for (for `--print-ir-after`).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

struct PassTiming {
  std::string name;
  double seconds = 0;  // wall time: printed by `tpusim compile`, never in report.json
};

class PassManager {
 public:
  using Pass = std::function<ir::Graph(const ir::Graph&)>;

  void add(std::string name, Pass pass);
  const std::vector<std::string>& names() const { return m_names; }

  // `print_after` holds pass names, or "all"; an unknown name is an error listing the passes.
  ir::Graph run(ir::Graph graph, const std::vector<std::string>& print_after, std::ostream* ir_out,
                std::vector<PassTiming>& timings) const;

 private:
  std::vector<std::string> m_names;
  std::vector<Pass> m_passes;
};

}  // namespace tpusim
