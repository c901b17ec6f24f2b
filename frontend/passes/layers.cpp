#include "frontend/passes/layers.hpp"

#include <map>

namespace tpusim {

std::string layerOfName(const std::string& name) {
  std::string base = name.substr(0, name.find(".grad"));
  const size_t slash = base.rfind('/');
  if (slash != std::string::npos) return slash == 0 ? base : base.substr(0, slash);
  return base.substr(0, base.find('.'));
}

std::vector<std::string> assignLayers(const ir::Graph& graph) {
  const std::vector<ir::Op>& ops = graph.ops();
  std::vector<std::string> layers;
  std::map<int, std::string> first_reader;  // weight -> layer of the first op that reads it
  for (const ir::Op& op : ops) {
    layers.push_back(layerOfName(op.name));
    for (int input : op.inputs) {
      if (graph.tensor(input).role == ir::TensorRole::kWeight) first_reader.emplace(input, layers.back());
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int output : ops[i].outputs) {
      const int weight = graph.tensor(output).alias_of;
      if (weight < 0 || graph.tensor(weight).role != ir::TensorRole::kWeight) continue;
      auto found = first_reader.find(weight);
      if (found != first_reader.end()) layers[i] = found->second;
    }
  }
  return layers;
}

}  // namespace tpusim
