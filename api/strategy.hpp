// TensorFlow's distribution strategies by name (`tpusim run MODEL --strategy NAME`,
// docs/strategies.md), and the slice each one runs a data-parallel step on.
//   mirrored               MirroredStrategy: one host's chips (host.chips_per_host), all-reduce over ICI
//   multi_worker_mirrored  MultiWorkerMirroredStrategy: --workers hosts, ICI within, DCN across
//                          (the hierarchical all-reduce)
//   tpu                    TPUStrategy: the pod slice of --topology
//   ps                     ParameterServerStrategy (api/ps_run.hpp)
// As TF defines them, num_replicas_in_sync is the replicas of all workers together, and
// the global batch is the per-replica batch times num_replicas_in_sync.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/common/params.hpp"
#include "sim/interconnect/topology.hpp"
#include "traces/program.pb.h"

namespace tpusim {

enum class Strategy { kNone, kMirrored, kMultiWorkerMirrored, kTpu, kParameterServer };

// "" -> kNone; the short names above or TF's class names (MirroredStrategy, ...).
// Anything else is a one-line kInvalidConfig error that lists them.
Strategy strategyFromName(const std::string& name);
const char* strategyName(Strategy strategy);       // "multi_worker_mirrored"
const char* strategyClassName(Strategy strategy);  // "MultiWorkerMirroredStrategy"

// The slice a data-parallel strategy runs on, from --topology (tpu, or no strategy)
// or the preset's hosts (mirrored, multi_worker_mirrored over `workers` hosts); none
// for one chip or ps. Zero workers is a one-line error. Which options fit the strategy is
// checked before, by api/option_rules.hpp; multi_worker_mirrored needs its workers here.
std::optional<Topology> strategySlice(Strategy strategy, const std::string& topology, std::optional<uint64_t> workers,
                                      const HardwareParams& hw);

// report.json's "strategy": name, class, num_replicas_in_sync, per_replica_batch,
// global_batch, and for the multi-host ones workers and chips_per_host.
nlohmann::ordered_json strategyEntry(Strategy strategy, const program::Program& program);

}  // namespace tpusim
