// When the steps of a parameter-server run end (docs/strategies.md, "Timing").
//
// A shard serves a worker's pull of n rows (b bytes) in
//     pull = max(b / dcn_gbps, b / memory_gbps) + n x request_service
// and the push of the n gradients in
//     push = max(b / dcn_gbps, 2b / memory_gbps) + n x request_service
// (the NIC and memory work in parallel; an update reads and writes the row).
// A worker's own NIC carries its b bytes each way in b / dcn_gbps. A message
// takes dcn latency L one way, so a pull and a push each cost a round trip 2L.
//
// sync:  step k = reshard_k + 2L + max(max_s pull_s, max_w link_w) + compute
//                 + 2L + max(max_s push_s, max_w link_w), with pull_s and push_s
//                 over every worker's rows on shard s (they all pull at once).
// async: each shard serves the workers' requests first come, first served; a
//        worker starts step k when it has finished step k-1 and every worker has
//        finished step k-1-S (S = staleness_steps: the weights it reads miss at
//        most S steps of others' updates). A re-shard is a barrier: every worker
//        finishes step k-1, then the rows move, then step k starts.
// A re-shard moving rows takes L + max_s (max(out_s, in_s) / dcn_gbps + in_s rows x request_service):
// the rows leave in bulk and each is inserted at its new shard.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/host/host_config.hpp"
#include "sim/ps/ps_traffic.hpp"

namespace tpusim::ps {

class ShardCosts {
 public:
  explicit ShardCosts(const PsConfig& config);
  Picos pull(const ShardLoad& load) const;
  Picos push(const ShardLoad& load) const;
  Picos workerLink(uint64_t bytes) const { return transferPicos(bytes, m_dcn_gbps); }
  // One shard's share of a re-shard: its link, each way, and a request per row it receives.
  Picos moveBusy(const ReshardMoves& moves, size_t shard) const;
  Picos reshard(const ReshardMoves& moves) const;
  Picos latency() const { return m_latency; }

 private:
  double m_dcn_gbps;
  double m_memory_gbps;
  Picos m_latency;
  Picos m_service;
};

struct Schedule {
  std::vector<Picos> step_end;      // per step: the last worker finishes it
  std::vector<Picos> reshard;       // per step: time of the re-shard before it (0: none)
  std::vector<Picos> worker_start;  // [step x workers + worker]
  std::vector<Picos> worker_end;
  std::vector<Picos> shard_busy;  // per shard, over the run (pulls, pushes and re-shard moves)
};

// `compute`: one worker's compute time of a step (the simulated chip's step).
Schedule scheduleSync(const Traffic& traffic, const ShardCosts& costs, Picos compute);
Schedule scheduleAsync(const Traffic& traffic, const ShardCosts& costs, Picos compute, uint64_t staleness_steps);

}  // namespace tpusim::ps
