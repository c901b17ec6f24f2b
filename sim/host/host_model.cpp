#include "sim/host/host_model.hpp"

#include <algorithm>

#include "sim/common/error.hpp"

namespace tpusim {

const char* bottleneckName(HostBottleneck bottleneck) {
  switch (bottleneck) {
    case HostBottleneck::kDevice: return "device";
    case HostBottleneck::kStorageRead: return "host storage read";
    case HostBottleneck::kMap: return "host map";
    case HostBottleneck::kPcie: return "pcie";
    case HostBottleneck::kCheckpoint: return "checkpoint";
  }
  return "?";
}

double HostRun::meanStepSeconds(size_t from) const {
  if (steps.size() < 2 || from + 1 >= steps.size()) return 0;
  const Picos span = steps.back().start - steps[from].start;
  return secondsFromPicos(span) / static_cast<double>(steps.size() - 1 - from);
}

HostBottleneck HostModel::bottleneckOf(const HostRun& run) const {
  // An input stall is blamed on the busier of the two stages that build batches.
  const double read_busy = static_cast<double>(m_pipeline.readBusy());
  const double map_busy = static_cast<double>(m_pipeline.mapBusy()) / static_cast<double>(m_host.num_parallel_calls);
  const HostBottleneck host = read_busy >= map_busy ? HostBottleneck::kStorageRead : HostBottleneck::kMap;
  // With prefetch the host builds batches while the device computes, so a
  // device that still waits for input once the run has settled (its second
  // half) waits on a host slower than itself, however small the wait.
  if (m_host.prefetch_batches > 0) {
    for (size_t k = run.steps.size() / 2; k < run.steps.size(); ++k) {
      if (run.steps[k].input_stall > 0) return host;
    }
  }
  // Otherwise (or with no prefetch, where every part adds to the step) the
  // largest share of the elapsed time.
  const Picos largest = std::max({run.compute, run.input_stall, run.infeed, run.checkpoint});
  if (largest == run.compute) return HostBottleneck::kDevice;
  if (largest == run.input_stall) return host;
  if (largest == run.infeed) return HostBottleneck::kPcie;
  return HostBottleneck::kCheckpoint;
}

HostModel::HostModel(const HostPipelineConfig& host, uint64_t batch_size, uint64_t state_bytes, StatsRegistry& stats,
                     const std::string& stat_prefix)
    : m_host(host),
      m_batch(batch_size),
      m_pipeline(host, batch_size, stats, stat_prefix),
      m_infeed(host.pcie_gbps, host.pcie_latency_us, stats, stat_prefix + ".pcie.infeed"),
      m_outfeed(host.pcie_gbps, host.pcie_latency_us, stats, stat_prefix + ".pcie.outfeed"),
      m_checkpoints(host, state_bytes, m_outfeed, stats, stat_prefix + ".checkpoint"),
      m_steps(stats.counter(stat_prefix + ".steps", "steps", "training steps fed")),
      m_elapsed(stats.counter(stat_prefix + ".elapsed_ps", "ps", "time from the first request to the last step's end")),
      m_compute(stats.counter(stat_prefix + ".device.compute_ps", "ps", "time the device computed")),
      m_input_stall(stats.counter(stat_prefix + ".input_stall_ps", "ps",
                                  "time the device waited for a batch the host had not built yet")),
      m_infeed_wait(
          stats.counter(stat_prefix + ".infeed_wait_ps", "ps", "time the device waited for its batch to cross PCIe")),
      m_bottleneck(stats.counter(
          stat_prefix + ".bottleneck", "code",
          "what limits the step (docs/host.md): 0 device, 1 host storage read, 2 host map, 3 pcie, 4 checkpoint")) {
  stats.unit(stat_prefix, UnitKind::kHost);
  // Formulas capture only counters, which the registry owns: they stay valid
  // after the model is gone.
  const Counter& elapsed = m_elapsed;
  auto fraction = [&elapsed](const Counter& part, double parts = 1) {
    return [&elapsed, &part, parts] {
      return elapsed.value() == 0 ? 0.0 : static_cast<double>(part.value()) / (parts * elapsed.value());
    };
  };
  stats.formula(stat_prefix + ".device.utilization", "fraction", "device compute / elapsed", fraction(m_compute));
  stats.formula(stat_prefix + ".input_stall_fraction", "fraction", "input stall / elapsed", fraction(m_input_stall));
  const Counter& read_busy = *stats.at(stat_prefix + ".read.busy_ps").counter;
  const Counter& map_busy = *stats.at(stat_prefix + ".map.busy_ps").counter;
  const Counter& pcie_busy = *stats.at(stat_prefix + ".pcie.infeed.busy_ps").counter;
  stats.formula(stat_prefix + ".read.utilization", "fraction", "storage read busy / elapsed", fraction(read_busy));
  stats.formula(stat_prefix + ".map.utilization", "fraction", "map busy / (threads x elapsed)",
                fraction(map_busy, static_cast<double>(host.num_parallel_calls)));
  stats.formula(stat_prefix + ".pcie.infeed.utilization", "fraction", "PCIe infeed busy / elapsed",
                fraction(pcie_busy));
}

HostRun HostModel::run(const std::vector<Picos>& compute) {
  if (m_ran) throw Error(ErrorKind::kInternal, "HostModel::run called twice");
  m_ran = true;
  HostRun out;
  out.steps.resize(compute.size());
  std::vector<Picos> taken;
  taken.reserve(compute.size());
  const uint64_t batch_bytes = m_batch * m_host.infeed_bytes_per_example;
  Picos device_free = 0;
  for (uint64_t k = 0; k < compute.size(); ++k) {
    StepTiming& step = out.steps[k];
    step.request = device_free;
    step.batch_ready = m_pipeline.produceNext(m_pipeline.gate(k, taken, step.request));
    step.taken = std::max(step.request, step.batch_ready);
    taken.push_back(step.taken);
    step.start = m_infeed.transfer(step.taken, batch_bytes).arrival;
    step.end = step.start + compute[k];
    step.input_stall = step.taken - step.request;
    step.infeed = step.start - step.taken;
    device_free = step.end;
    if (m_checkpoints.due(k)) {
      device_free = m_checkpoints.write(step.end);
      step.checkpoint = device_free - step.end;
    }
    out.compute += compute[k];
    out.input_stall += step.input_stall;
    out.infeed += step.infeed;
    out.checkpoint += step.checkpoint;
  }
  out.elapsed = device_free;

  out.bottleneck = bottleneckOf(out);
  m_bottleneck.add(static_cast<uint64_t>(out.bottleneck));
  m_steps.add(compute.size());
  m_elapsed.add(out.elapsed);
  m_compute.add(out.compute);
  m_input_stall.add(out.input_stall);
  m_infeed_wait.add(out.infeed);
  return out;
}

}  // namespace tpusim
