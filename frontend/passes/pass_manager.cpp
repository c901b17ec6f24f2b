#include "frontend/passes/pass_manager.hpp"

#include <algorithm>
#include <chrono>

#include "sim/common/error.hpp"

namespace tpusim {

void PassManager::add(std::string name, Pass pass) {
  m_names.push_back(std::move(name));
  m_passes.push_back(std::move(pass));
}

ir::Graph PassManager::run(ir::Graph graph, const std::vector<std::string>& print_after, std::ostream* ir_out,
                           std::vector<PassTiming>& timings) const {
  for (const std::string& name : print_after) {
    if (name == "all" || std::find(m_names.begin(), m_names.end(), name) != m_names.end()) continue;
    std::string known;
    for (const std::string& pass : m_names) known.append(known.empty() ? "" : ", ").append(pass);
    throw Error(ErrorKind::kInvalidConfig, "unknown pass '" + name + "' (passes: " + known + ", or all)");
  }
  const auto printed = [&](const std::string& name) {
    return std::find(print_after.begin(), print_after.end(), name) != print_after.end() ||
           std::find(print_after.begin(), print_after.end(), "all") != print_after.end();
  };
  for (size_t i = 0; i < m_passes.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    try {
      graph = m_passes[i](graph);
    } catch (const Error& error) {
      throw error.within("pass " + m_names[i]);
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    timings.push_back({m_names[i], took.count()});
    if (ir_out && printed(m_names[i])) *ir_out << "// IR after " << m_names[i] << "\n" << graph.toString();
  }
  return graph;
}

}  // namespace tpusim
