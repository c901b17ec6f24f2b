// One host feeding one chip for N training steps (docs/host.md), standalone:
// the device is a list of per-step compute times, not the simulated chip yet.
//
// Step k: the device asks for batch k when step k-1 (and any checkpoint after
// it) ends; it takes batch k from the prefetch buffer once the host has built
// it (the wait is the input stall); the batch then crosses PCIe, and step k
// computes from the batch's arrival. Checkpoints follow steps N-1, 2N-1, ...
//   request_k = end_{k-1} (+ checkpoint)     taken_k = max(request_k, ready_k)
//   start_k   = PCIe arrival of batch k       end_k   = start_k + compute_k
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/stats.hpp"
#include "sim/host/checkpoint.hpp"
#include "sim/host/input_pipeline.hpp"
#include "sim/host/pcie.hpp"

namespace tpusim {

struct StepTiming {
  Picos request = 0;      // the device asks for this step's batch
  Picos batch_ready = 0;  // the host has built the batch
  Picos taken = 0;        // max(request, batch_ready)
  Picos start = 0;        // the batch is on the chip; compute begins
  Picos end = 0;          // compute ends
  Picos input_stall = 0;  // taken - request: the host was late
  Picos infeed = 0;       // start - taken: the PCIe transfer, waited for
  Picos checkpoint = 0;   // after this step, 0 if none
};

// What limits the step time of a run (docs/host.md, "bottleneck"): with
// prefetch, the host if the device still waits for input in the run's second
// half; otherwise the largest share of compute, input stall, PCIe wait and
// checkpoints. An input stall is blamed on the busier of read and map.
// The values are the codes of the `.bottleneck` stat.
enum class HostBottleneck { kDevice = 0, kStorageRead = 1, kMap = 2, kPcie = 3, kCheckpoint = 4 };
const char* bottleneckName(HostBottleneck bottleneck);

struct HostRun {
  std::vector<StepTiming> steps;
  Picos elapsed = 0;  // end of the last step, with its checkpoint
  Picos compute = 0;
  Picos input_stall = 0;
  Picos infeed = 0;
  Picos checkpoint = 0;
  HostBottleneck bottleneck = HostBottleneck::kDevice;
  double deviceUtilization() const { return elapsed == 0 ? 0 : static_cast<double>(compute) / elapsed; }
  // Mean start-to-start time of steps [from, steps.size() - 1], for steady states.
  double meanStepSeconds(size_t from) const;
};

class HostModel {
 public:
  // `batch_size` examples per step and `state_bytes` of checkpointed state
  // come from the run. Stats are registered under `stat_prefix` ("host0").
  // Throws Error for a bad config (kInvalidConfig) or batch size 0 (kInvalidInput).
  HostModel(const HostPipelineConfig& host, uint64_t batch_size, uint64_t state_bytes, StatsRegistry& stats,
            const std::string& stat_prefix);

  // Runs one step per element of `compute` (the device's compute time of each
  // step). Once per model: a second call is an internal error.
  HostRun run(const std::vector<Picos>& compute);
  HostRun run(Picos compute_per_step, uint64_t steps) { return run(std::vector<Picos>(steps, compute_per_step)); }

 private:
  HostPipelineConfig m_host;
  uint64_t m_batch;
  InputPipeline m_pipeline;
  PcieLink m_infeed;
  PcieLink m_outfeed;
  CheckpointWriter m_checkpoints;
  bool m_ran = false;

  HostBottleneck bottleneckOf(const HostRun& run) const;

  Counter& m_steps;
  Counter& m_elapsed;
  Counter& m_compute;
  Counter& m_input_stall;
  Counter& m_infeed_wait;
  Counter& m_bottleneck;  // a HostBottleneck, set once by run()
};

}  // namespace tpusim
