// ParameterServerStrategy's parameters as plain values (configs/hardware.proto's
// DcnConfig and PsConfig, docs/strategies.md), checked once.
#pragma once

#include <cstdint>
#include <string>

#include "configs/hardware.pb.h"

namespace tpusim::ps {

enum class ShardingPolicy { kRoundRobin, kSizeBalanced, kDynamic };
enum class Aggregation { kSync, kAsync };

// "round_robin", "size_balanced", "dynamic" (also with '-' for '_'); anything
// else is a one-line kInvalidConfig error that lists the names.
ShardingPolicy parseShardingPolicy(const std::string& name);
const char* shardingPolicyName(ShardingPolicy policy);
// "sync" or "async"; anything else is a one-line kInvalidConfig error.
Aggregation parseAggregation(const std::string& name);
const char* aggregationName(Aggregation aggregation);

struct PsConfig {
  double dcn_gbps = 25;        // per host, each direction
  double dcn_latency_us = 10;  // one way
  uint64_t tasks = 16;         // PS tasks = shards
  double request_service_ns = 100;
  double memory_gbps = 100;
  ShardingPolicy sharding = ShardingPolicy::kRoundRobin;
  uint64_t reshard_every_steps = 2;
  double zipf_exponent = 1.1;
  uint64_t seed = 1;
  Aggregation aggregation = Aggregation::kSync;
  uint64_t staleness_steps = 2;
};

// dcn.* and ps.* of a preset.
PsConfig psConfigOf(const config::HardwareConfig& hw);
// Throws Error (kInvalidConfig) naming the parameter: zero or non-finite
// bandwidth, zero tasks or reshard interval, a negative exponent, latency or cost.
void checkPsConfig(const PsConfig& config);

}  // namespace tpusim::ps
