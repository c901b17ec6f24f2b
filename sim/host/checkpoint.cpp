#include "sim/host/checkpoint.hpp"

#include "sim/common/error.hpp"

namespace tpusim {

CheckpointWriter::CheckpointWriter(const HostPipelineConfig& host, uint64_t state_bytes, PcieLink& outfeed,
                                   StatsRegistry& stats, const std::string& stat_prefix)
    : m_every(host.checkpoint_every_steps),
      m_state_bytes(state_bytes),
      m_write_ps(0),
      m_outfeed(outfeed),
      m_count(stats.counter(stat_prefix + ".count", "count", "checkpoints written")),
      m_bytes(stats.counter(stat_prefix + ".bytes", "bytes", "checkpoint bytes written to storage")),
      m_stall(stats.counter(stat_prefix + ".stall_ps", "ps",
                            "time the device waited for checkpoints (copy to host, then write to storage)")) {
  stats.unit(stat_prefix, UnitKind::kCheckpoint);
  checkHostConfig(host);
  if (m_every > 0 && state_bytes == 0) {
    throw Error(ErrorKind::kInvalidInput,
                "checkpoints every " + std::to_string(m_every) + " steps need the training state's size (got 0 bytes)");
  }
  m_write_ps = transferPicos(state_bytes, host.storage_write_gbps);
}

bool CheckpointWriter::due(uint64_t step) const {
  return m_every > 0 && (step + 1) % m_every == 0;
}

Picos CheckpointWriter::write(Picos at) {
  // The copy must finish before the write of its last byte can: no overlap
  // between the two is taken (host memory staging, then one sequential write).
  const PcieTransfer copy = m_outfeed.transfer(at, m_state_bytes);
  const Picos done = copy.arrival + m_write_ps;
  m_count.add();
  m_bytes.add(m_state_bytes);
  m_stall.add(done - at);
  return done;
}

}  // namespace tpusim
