#include "reference/feeds.hpp"

#include <span>

#include "sim/common/error.hpp"
#include "sim/common/numerics.hpp"

namespace tpusim::reference {

std::vector<ir::TensorValue> boundFeeds(const ir::Graph& graph, const std::map<std::string, ir::TensorValue>& feeds) {
  std::vector<ir::TensorValue> values(graph.tensors().size());
  for (const ir::Tensor& tensor : graph.tensors()) {
    if (graph.producer(tensor.id) != nullptr) continue;
    const auto feed = feeds.find(tensor.name);
    if (feed == feeds.end()) {
      throw Error(ErrorKind::kInvalidInput,
                  "no value given for " + std::string(ir::tensorRoleName(tensor.role)) + " '" + tensor.name + "'");
    }
    if (feed->second.shape != tensor.shape || feed->second.dtype != tensor.dtype ||
        feed->second.size() != static_cast<size_t>(ir::elementCount(tensor.shape))) {
      throw Error(ErrorKind::kInvalidInput, "value for '" + tensor.name + "' is " + dtypeName(feed->second.dtype) +
                                                ir::shapeToString(feed->second.shape) + ", the graph needs " +
                                                dtypeName(tensor.dtype) + ir::shapeToString(tensor.shape));
    }
    ir::TensorValue& value = values[static_cast<size_t>(tensor.id)];
    value = feed->second;
    numerics::roundInPlace(tensor.dtype, std::span<double>(value.floats));
  }
  return values;
}

}  // namespace tpusim::reference
