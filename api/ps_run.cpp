#include "api/ps_run.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/common/error.hpp"
#include "sim/ps/ps_model.hpp"

namespace tpusim {

std::vector<ps::EmbeddingTable> embeddingTablesOf(const ir::Graph& graph, uint64_t batch) {
  std::vector<ps::EmbeddingTable> tables;
  std::map<int, size_t> index_of;  // weight tensor id -> table
  for (const ir::Op& op : graph.ops()) {
    if (op.type != ir::OpType::kGather || op.axis != 0) continue;
    int data = op.inputs[0];
    const ir::Op* producer = graph.producer(data);
    if (producer != nullptr && producer->type == ir::OpType::kCast) data = producer->inputs[0];  // mixed precision
    const ir::Tensor& table = graph.tensor(data);
    if (table.role != ir::TensorRole::kWeight || table.shape.size() != 2) continue;
    const uint64_t ids = static_cast<uint64_t>(ir::elementCount(graph.tensor(op.inputs[1]).shape));
    const uint64_t per_example = std::max<uint64_t>(1, ids / std::max<uint64_t>(1, batch));
    auto [it, added] = index_of.emplace(data, tables.size());
    if (!added) {
      tables[it->second].lookups_per_example += per_example;
      continue;
    }
    tables.push_back({table.name, static_cast<uint64_t>(table.shape[0]),
                      static_cast<uint64_t>(table.shape[1]) * dtypeBytes(table.dtype), per_example});
  }
  return tables;
}

nlohmann::ordered_json runPsSteps(const HardwareParams& hw, const ir::Graph& graph,
                                  const nlohmann::ordered_json& report, uint64_t workers, uint64_t steps) {
  const uint64_t batch = report["batch"].get<uint64_t>();
  if (batch == 0) throw Error(ErrorKind::kInvalidConfig, "--strategy ps needs a model with a batch dimension");
  const ps::PsConfig config = ps::psConfigOf(hw.config());
  const std::vector<ps::EmbeddingTable> tables = embeddingTablesOf(graph, batch);
  const double step_s = report["step_time_s"].get<double>();
  const Picos compute = static_cast<Picos>(std::llround(step_s * 1e12));
  const ps::PsResult run = ps::runParameterServer(tables, config, workers, batch, steps, compute);

  uint64_t rows = 0;
  for (const ps::EmbeddingTable& t : tables) rows += t.rows;
  nlohmann::ordered_json s;
  s["strategy"] = "ParameterServerStrategy";
  s["policy"] = ps::shardingPolicyName(config.sharding);
  s["aggregation"] = ps::aggregationName(config.aggregation);
  if (config.aggregation == ps::Aggregation::kAsync) s["staleness_steps"] = config.staleness_steps;
  if (config.sharding == ps::ShardingPolicy::kDynamic) s["reshard_every_steps"] = config.reshard_every_steps;
  s["workers"] = workers;
  s["tasks"] = config.tasks;
  s["steps"] = steps;
  s["batch_per_worker"] = batch;
  s["zipf_exponent"] = config.zipf_exponent;
  s["seed"] = config.seed;
  s["tables"] = tables.size();
  s["table_rows"] = rows;
  s["lookups"] = run.lookups;
  s["unique_rows"] = run.unique_rows;
  s["step_compute_s"] = secondsFromPicos(compute);
  s["mean_step_s"] = run.meanStepSeconds();
  s["step_s"] = run.stepSeconds();
  s["reshards"] = run.reshards;
  s["resharded_rows"] = run.resharded_rows;
  Picos reshard = 0;
  for (Picos p : run.schedule.reshard) reshard += p;
  s["reshard_s"] = secondsFromPicos(reshard);
  s["imbalance"] = {{"bytes", run.bytes_imbalance}, {"requests", run.requests_imbalance}, {"busy", run.busy_imbalance}};
  nlohmann::ordered_json shards = nlohmann::ordered_json::array();
  for (size_t i = 0; i < run.shards.size(); ++i) {
    const ps::ShardStats& shard = run.shards[i];
    shards.push_back({{"shard", i},
                      {"rows_held", shard.rows_held},
                      {"bytes_held", shard.bytes_held},
                      {"rows", shard.rows},
                      {"bytes", shard.bytes},
                      {"requests", shard.requests},
                      {"busy_s", secondsFromPicos(shard.busy)}});
  }
  s["shards"] = std::move(shards);
  return s;
}

}  // namespace tpusim
