// Placement: the unit each op runs on. Matmuls and convolutions go to the MXUs;
// elementwise, normalization, reduction and layout ops to the vector unit; gathers
// are DMA work; reshapes are views and move nothing; an all-reduce across replicas
// goes to the chip's interconnect (ICI). (Graph inputs arrive from the
// host; the host and its infeed are not modelled yet.)
#pragma once

#include "frontend/ir/graph.hpp"

namespace tpusim {

ir::Unit placementOf(ir::OpType type);
ir::Unit placementOf(const ir::Op& op);
ir::Graph placeOps(const ir::Graph& graph);

}  // namespace tpusim
