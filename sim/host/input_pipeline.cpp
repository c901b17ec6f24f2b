#include "sim/host/input_pipeline.hpp"

#include <algorithm>
#include <limits>

#include "sim/common/error.hpp"

namespace tpusim {

InputPipeline::InputPipeline(const HostPipelineConfig& host, uint64_t batch_size, StatsRegistry& stats,
                             const std::string& stat_prefix)
    : m_host(host),
      m_batch(batch_size),
      m_examples(stats.counter(stat_prefix + ".examples", "examples", "examples read and mapped")),
      m_batches(stats.counter(stat_prefix + ".batches", "batches", "batches built")),
      m_read_bytes(stats.counter(stat_prefix + ".read.bytes", "bytes", "bytes read from storage")),
      m_read_busy(stats.counter(stat_prefix + ".read.busy_ps", "ps", "time the storage read stream was busy")),
      m_cache_hits(stats.counter(stat_prefix + ".read.cache_hits", "examples",
                                 "examples served from the in-memory cache instead of storage")),
      m_map_busy(stats.counter(stat_prefix + ".map.busy_ps", "thread-ps",
                               "time spent mapping examples, summed over the map threads")) {
  checkHostConfig(host);
  if (batch_size == 0) throw Error(ErrorKind::kInvalidInput, "host input pipeline: batch size must be > 0 (got 0)");
  m_read_ps = transferPicos(host.example_bytes, host.storage_read_gbps);
  m_map_ps = picosFromMicros(host.map_us);
  for (uint64_t t = 0; t < host.num_parallel_calls; ++t) m_threads.push(0);
}

Picos InputPipeline::gate(uint64_t batch, const std::vector<Picos>& taken, Picos request) const {
  const uint64_t depth = m_host.prefetch_batches;
  if (depth == 0) return request;
  return batch < depth ? 0 : taken.at(batch - depth);
}

Picos InputPipeline::produceNext(Picos gate) {
  Picos ready = gate;
  for (uint64_t e = 0; e < m_batch; ++e, ++m_next_example) {
    Picos read_done;
    const bool cached = m_host.cache_in_memory && m_next_example >= m_host.epoch_examples;
    if (cached) {
      // Host memory (tens of GB/s) against storage: the copy is neglected.
      read_done = gate;
      m_cache_hits.add();
    } else {
      const Picos start = std::max(gate, m_read_free);
      read_done = start + m_read_ps;
      m_read_free = read_done;
      m_read_busy.add(m_read_ps);
      m_read_bytes.add(m_host.example_bytes);
    }
    const Picos thread_free = m_threads.top();
    m_threads.pop();
    const Picos done = std::max(read_done, thread_free) + m_map_ps;
    m_threads.push(done);
    m_map_busy.add(m_map_ps);
    ready = std::max(ready, done);
  }
  m_examples.add(m_batch);
  m_batches.add();
  ++m_next_batch;
  return ready;
}

double PipelineRates::bound() const {
  return std::min({storage, map, pcie});
}

const char* PipelineRates::limiter() const {
  if (storage <= map && storage <= pcie) return "storage read";
  return map <= pcie ? "map" : "pcie";
}

PipelineRates pipelineRates(const HostPipelineConfig& host, uint64_t batch_size, bool cached) {
  checkHostConfig(host);
  if (batch_size == 0) throw Error(ErrorKind::kInvalidInput, "host input pipeline: batch size must be > 0 (got 0)");
  constexpr double kInf = std::numeric_limits<double>::infinity();
  PipelineRates rates;
  rates.storage = cached ? kInf : host.storage_read_gbps * 1e9 / static_cast<double>(host.example_bytes);
  rates.map = host.map_us == 0 ? kInf : static_cast<double>(host.num_parallel_calls) * 1e6 / host.map_us;
  const double batch = static_cast<double>(batch_size);
  const double batch_seconds =
      batch * static_cast<double>(host.infeed_bytes_per_example) / (host.pcie_gbps * 1e9) + host.pcie_latency_us * 1e-6;
  rates.pcie = batch / batch_seconds;
  return rates;
}

}  // namespace tpusim
