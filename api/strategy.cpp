#include "api/strategy.hpp"

#include "sim/common/error.hpp"
#include "sim/interconnect/dcn.hpp"

namespace tpusim {

namespace {

struct Named {
  Strategy strategy;
  const char* name;
  const char* class_name;
};

constexpr Named kStrategies[] = {
    {Strategy::kMirrored, "mirrored", "MirroredStrategy"},
    {Strategy::kMultiWorkerMirrored, "multi_worker_mirrored", "MultiWorkerMirroredStrategy"},
    {Strategy::kTpu, "tpu", "TPUStrategy"},
    {Strategy::kParameterServer, "ps", "ParameterServerStrategy"},
};

Error optionError(const std::string& message) {
  return Error(ErrorKind::kInvalidConfig, message);
}

}  // namespace

Strategy strategyFromName(const std::string& name) {
  if (name.empty()) return Strategy::kNone;
  for (const Named& s : kStrategies) {
    if (name == s.name || name == s.class_name) return s.strategy;
  }
  throw optionError("unknown strategy '" + name + "' (mirrored, multi_worker_mirrored, tpu, ps; docs/strategies.md)");
}

const char* strategyName(Strategy strategy) {
  for (const Named& s : kStrategies) {
    if (s.strategy == strategy) return s.name;
  }
  return "";
}

const char* strategyClassName(Strategy strategy) {
  for (const Named& s : kStrategies) {
    if (s.strategy == strategy) return s.class_name;
  }
  return "";
}

std::optional<Topology> strategySlice(Strategy strategy, const std::string& topology, std::optional<uint64_t> workers,
                                      const HardwareParams& hw) {
  if (workers && *workers == 0) throw optionError("--workers must be > 0");
  if (strategy == Strategy::kMultiWorkerMirrored && !workers) {  // api/option_rules.cpp refuses it first
    throw Error(ErrorKind::kInternal, "multi_worker_mirrored's slice needs its workers");
  }
  const TopologyKind kind = topologyKindFromName(hw.config().ici().topology());
  const auto chips_per_host = static_cast<int>(hw.config().host().chips_per_host());
  if (strategy == Strategy::kMirrored) return hostsTopology(kind, chips_per_host, 1);
  if (strategy == Strategy::kMultiWorkerMirrored) {
    if (*workers > (uint64_t{1} << 20)) throw optionError("--workers must be at most 1048576");
    return hostsTopology(kind, chips_per_host, static_cast<int>(*workers));
  }
  if (topology.empty()) return std::nullopt;
  return Topology::parse(kind, topology);
}

nlohmann::ordered_json strategyEntry(Strategy strategy, const program::Program& program) {
  // Program.replicas counts chips; a tensor-parallel group of them is one replica, as in TF.
  const uint64_t chips = program.replicas() < 1 ? 1 : program.replicas();
  const uint64_t replicas = chips / (program.tensor_parallel() < 1 ? 1 : program.tensor_parallel());
  nlohmann::ordered_json entry;
  entry["name"] = strategyName(strategy);
  entry["class"] = strategyClassName(strategy);
  entry["num_replicas_in_sync"] = replicas;
  entry["per_replica_batch"] = program.batch();
  entry["global_batch"] = program.batch() * replicas;
  if (strategy == Strategy::kMirrored || strategy == Strategy::kMultiWorkerMirrored) {
    const uint64_t workers = program.hosts() < 1 ? 1 : program.hosts();
    entry["workers"] = workers;
    entry["chips_per_host"] = chips / workers;
  }
  return entry;
}

}  // namespace tpusim
