#include "sim/ps/ps_config.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/common/error.hpp"
#include "sim/host/host_config.hpp"

namespace tpusim::ps {

namespace {

std::string canonical(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

uint64_t count(int64_t value) {
  return value < 0 ? uint64_t{0} : static_cast<uint64_t>(value);
}

}  // namespace

ShardingPolicy parseShardingPolicy(const std::string& name) {
  const std::string n = canonical(name);
  if (n == "round_robin") return ShardingPolicy::kRoundRobin;
  if (n == "size_balanced") return ShardingPolicy::kSizeBalanced;
  if (n == "dynamic") return ShardingPolicy::kDynamic;
  throw Error(ErrorKind::kInvalidConfig,
              "unknown sharding policy '" + name + "' (known: round_robin, size_balanced, dynamic)");
}

const char* shardingPolicyName(ShardingPolicy policy) {
  switch (policy) {
    case ShardingPolicy::kRoundRobin: return "round_robin";
    case ShardingPolicy::kSizeBalanced: return "size_balanced";
    case ShardingPolicy::kDynamic: return "dynamic";
  }
  return "?";
}

Aggregation parseAggregation(const std::string& name) {
  if (name == "sync") return Aggregation::kSync;
  if (name == "async") return Aggregation::kAsync;
  throw Error(ErrorKind::kInvalidConfig, "unknown gradient aggregation '" + name + "' (known: sync, async)");
}

const char* aggregationName(Aggregation aggregation) {
  return aggregation == Aggregation::kSync ? "sync" : "async";
}

PsConfig psConfigOf(const config::HardwareConfig& hw) {
  PsConfig c;
  c.dcn_gbps = hw.dcn().host_bandwidth_gbps();
  c.dcn_latency_us = hw.dcn().latency_us();
  const config::PsConfig& p = hw.ps();
  c.tasks = count(p.tasks());
  c.request_service_ns = p.request_service_ns();
  c.memory_gbps = p.memory_gbps();
  c.sharding = parseShardingPolicy(p.sharding());
  c.reshard_every_steps = count(p.reshard_every_steps());
  c.zipf_exponent = p.zipf_exponent();
  c.seed = count(p.seed());
  c.aggregation = parseAggregation(p.aggregation());
  c.staleness_steps = count(p.staleness_steps());
  return c;
}

void checkPsConfig(const PsConfig& c) {
  requirePositive(c.dcn_gbps, "dcn.host_bandwidth_gbps", "GB/s");
  requireNonNegative(c.dcn_latency_us, "dcn.latency_us", "us");
  requirePositive(static_cast<double>(c.tasks), "ps.tasks", "count");
  if (c.tasks > 65536) {
    throw Error(ErrorKind::kInvalidConfig,
                "parameter ps.tasks must be <= 65536 (got " + std::to_string(c.tasks) + " count)");
  }
  requireNonNegative(c.request_service_ns, "ps.request_service_ns", "ns");
  requirePositive(c.memory_gbps, "ps.memory_gbps", "GB/s");
  requirePositive(static_cast<double>(c.reshard_every_steps), "ps.reshard_every_steps", "steps");
  if (!std::isfinite(c.zipf_exponent) || c.zipf_exponent < 0) {
    std::ostringstream text;
    text << "parameter ps.zipf_exponent must be >= 0 (got " << c.zipf_exponent << ")";
    throw Error(ErrorKind::kInvalidConfig, text.str());
  }
}

}  // namespace tpusim::ps
