// A tf.data-like host input pipeline: read -> map (T threads) -> batch (B)
// -> prefetch (D batches), simulated example by example (docs/host.md).
//
//   read      one stream from storage, examples in order, example_bytes at
//             storage_read_gbps each; with cache = memory, examples of the
//             second and later epochs come from host memory at no cost
//   map       num_parallel_calls threads; an example starts on the earliest
//             free thread once it is read and costs map_us there
//   batch     batch j is ready when its last example is mapped
//   prefetch  batch j's examples may start once batch j - D has been taken by
//             the device (D = prefetch_batches); with D = 0 only when the
//             device asks for batch j (no run-ahead at all)
//
// Every stage serves examples first come, first served in example order, so
// computing the schedule example by example in that order is the event
// simulation itself: no event can overtake an earlier one.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "sim/common/stats.hpp"
#include "sim/host/host_config.hpp"

namespace tpusim {

class InputPipeline {
 public:
  // Throws Error: kInvalidConfig for a bad config, kInvalidInput for batch_size 0.
  InputPipeline(const HostPipelineConfig& host, uint64_t batch_size, StatsRegistry& stats,
                const std::string& stat_prefix);

  // The earliest time batch `batch` (0, 1, 2, ... in order) may start, given
  // when the device took earlier batches and when it asks for this one.
  // `taken` holds the take times of batches 0 .. batch - 1.
  Picos gate(uint64_t batch, const std::vector<Picos>& taken, Picos request) const;
  // Builds the next batch, whose examples may start at `gate`; returns when it is ready.
  Picos produceNext(Picos gate);

  uint64_t batchSize() const { return m_batch; }
  uint64_t batchesProduced() const { return m_next_batch; }
  // Summed busy time of the map threads and of the read stream so far.
  uint64_t mapBusy() const { return m_map_busy.value(); }
  uint64_t readBusy() const { return m_read_busy.value(); }

 private:
  HostPipelineConfig m_host;
  uint64_t m_batch;
  Picos m_read_ps;  // one example from storage
  Picos m_map_ps;   // one example on one thread
  Picos m_read_free = 0;
  // When each map thread is next free; the top is the earliest.
  std::priority_queue<Picos, std::vector<Picos>, std::greater<Picos>> m_threads;
  uint64_t m_next_batch = 0;
  uint64_t m_next_example = 0;

  Counter& m_examples;
  Counter& m_batches;
  Counter& m_read_bytes;
  Counter& m_read_busy;
  Counter& m_cache_hits;
  Counter& m_map_busy;
};

// The steady-state rates of each stage in examples per second (docs/host.md):
//   storage  storage_read_gbps * 1e9 / example_bytes (infinite when cached)
//   map      num_parallel_calls / map_us * 1e6       (infinite when map_us = 0)
//   pcie     B / (B * infeed_bytes / pcie_gbps / 1e9 + pcie_latency): one batch
//            per transfer, the latency paid once per batch
// The pipeline cannot feed the device faster than their minimum.
struct PipelineRates {
  double storage = 0;
  double map = 0;
  double pcie = 0;
  double bound() const;
  // "storage read", "map" or "pcie": the stage with the lowest rate.
  const char* limiter() const;
};
PipelineRates pipelineRates(const HostPipelineConfig& host, uint64_t batch_size, bool cached = false);

}  // namespace tpusim
