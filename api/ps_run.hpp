// `tpusim run MODEL --strategy ps`: ParameterServerStrategy for the model's
// embedding tables (sim/ps/ps_model.hpp, docs/strategies.md). The chip
// simulates one step; every worker computes for that step's simulated time, and
// the parameter-server model adds the pulls of embedding rows and pushes of
// their gradients over DCN.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "frontend/ir/graph.hpp"
#include "sim/common/params.hpp"
#include "sim/ps/sharding.hpp"

namespace tpusim {

// The steps a ps run takes when --steps is not given, and its workers when --workers is not.
inline constexpr uint64_t kDefaultPsSteps = 10;
inline constexpr uint64_t kDefaultPsWorkers = 32;

// The embedding tables of `graph`: every 2-D weight (or a Cast of one) that a
// Gather along axis 0 reads, with the ids per example its Gathers look up
// (index elements / `batch`). Row bytes are the weight's (PS variables keep
// their own dtype). In graph order of the first Gather.
std::vector<ps::EmbeddingTable> embeddingTablesOf(const ir::Graph& graph, uint64_t batch);

// Runs the model's tables on the preset's parameter servers (dcn.*, ps.*) for
// `steps` steps of `workers` workers and returns report.json's "ps" section.
// The batch per worker and the compute step come from `report` (batch, step_time_s).
nlohmann::ordered_json runPsSteps(const HardwareParams& hw, const ir::Graph& graph,
                                  const nlohmann::ordered_json& report, uint64_t workers, uint64_t steps);

}  // namespace tpusim
