// Which layer (model module) each op belongs to, for per-layer reports.
//
// Exporters name nodes by their module path ("/layer1/layer1.0/conv1/Conv"): the
// layer is that path without the node's own part ("/layer1/layer1.0/conv1"). A
// name without a path is its own layer up to the first '.'. Backward ops are named
// after the forward op they differentiate ("<op>.grad..."), and so share its layer;
// an op that updates a weight in place (an optimizer step) joins the layer of the
// first op that reads the weight.
#pragma once

#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

// Per op, in graph order.
std::vector<std::string> assignLayers(const ir::Graph& graph);

// The layer that an op named `name` belongs to by its name alone.
std::string layerOfName(const std::string& name);

}  // namespace tpusim
