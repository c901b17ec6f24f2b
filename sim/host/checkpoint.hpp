// Checkpoint writes: after every N steps (host.checkpoint_every_steps) the
// training state (parameters and optimizer slots, `state_bytes`, from the run)
// is copied from the chip to the host over PCIe and written to storage at
// storage_write_gbps.
//
// The write is synchronous: the device stalls from the end of the step until
// the last byte is on storage, as with tf.train.Saver or a plain
// `checkpoints.save_checkpoint` in a JAX loop. That is the conservative case
// and the one the step time of such loops shows; asynchronous checkpointing
// (only the device-to-host copy blocks) is not modelled yet (docs/host.md).
#pragma once

#include <cstdint>
#include <string>

#include "sim/common/stats.hpp"
#include "sim/host/host_config.hpp"
#include "sim/host/pcie.hpp"

namespace tpusim {

class CheckpointWriter {
 public:
  // `outfeed` is the chip-to-host direction of PCIe. Throws Error
  // (kInvalidInput) when checkpoints are on and state_bytes is 0.
  CheckpointWriter(const HostPipelineConfig& host, uint64_t state_bytes, PcieLink& outfeed, StatsRegistry& stats,
                   const std::string& stat_prefix);

  // True when a checkpoint follows step `step` (0-based): steps N-1, 2N-1, ...
  bool due(uint64_t step) const;
  // Writes one checkpoint starting at `at` (the end of a step); returns when
  // the device may go on.
  Picos write(Picos at);

 private:
  uint64_t m_every;
  uint64_t m_state_bytes;
  Picos m_write_ps;
  PcieLink& m_outfeed;
  Counter& m_count;
  Counter& m_bytes;
  Counter& m_stall;
};

}  // namespace tpusim
