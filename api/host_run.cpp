#include "api/host_run.hpp"

#include <cmath>

#include "sim/common/error.hpp"
#include "sim/host/host_model.hpp"

namespace tpusim {

void checkHostSteps(uint64_t steps) {
  if (steps > kMaxHostSteps) {
    throw Error(ErrorKind::kInvalidConfig,
                "--steps " + std::to_string(steps) + " is above " + std::to_string(kMaxHostSteps) +
                    ", the most a run simulates (the host model keeps each step's timing; a pipeline reaches its "
                    "steady state in a few steps)");
  }
}

nlohmann::ordered_json runHostSteps(const HardwareParams& hw, const nlohmann::ordered_json& report, uint64_t steps,
                                    StatsRegistry& stats) {
  const uint64_t batch = report["batch"].get<uint64_t>();
  if (batch == 0) throw Error(ErrorKind::kInvalidConfig, "--steps needs a model with a batch dimension");
  const auto& roles = report["memory"]["bytes_by_role"];
  HostPipelineConfig host = hostConfigOf(hw.config());
  host.infeed_bytes_per_example = std::max<uint64_t>(1, roles["input"].get<uint64_t>() / batch);
  const uint64_t state = roles["weight"].get<uint64_t>() + roles["optimizer_state"].get<uint64_t>();
  const uint64_t cycles = report["total_cycles"].get<uint64_t>();
  const double clock_mhz = hw.config().chip().clock_mhz();
  HostModel model(host, batch, std::max<uint64_t>(1, state), stats, "host0");
  const HostRun run = model.run(picosFromCycles(cycles, clock_mhz), steps);

  // The MXUs did the step's MACs once per step, over the whole run's time.
  double macs = 0, units = 0;
  for (const auto& [name, unit] : report["units"].items()) {
    if (!unit.contains("macs")) continue;
    macs += unit["macs"].get<double>();
    units += 1;
  }
  const double pes = static_cast<double>(hw.config().mxu().rows() * hw.config().mxu().cols());
  const double run_cycles = secondsFromPicos(run.elapsed) * clock_mhz * 1e6;
  nlohmann::ordered_json s;
  s["steps"] = steps;
  s["shortcut"] = "one simulated step, repeated: every step computes for the simulated step time";
  s["step_compute_s"] = secondsFromPicos(picosFromCycles(cycles, clock_mhz));
  s["elapsed_s"] = secondsFromPicos(run.elapsed);
  s["mean_step_s"] = steps > 1 ? run.meanStepSeconds(1) : secondsFromPicos(run.elapsed);
  s["input_stall_s"] = secondsFromPicos(run.input_stall);
  // The same in chip cycles: what the device waited for its input, comparable with total_cycles.
  s["input_stall_cycles"] = static_cast<uint64_t>(std::llround(secondsFromPicos(run.input_stall) * clock_mhz * 1e6));
  s["infeed_s"] = secondsFromPicos(run.infeed);
  s["checkpoint_s"] = secondsFromPicos(run.checkpoint);
  s["device_utilization"] = run.deviceUtilization();
  s["mxu_mac_utilization"] =
      units > 0 && run_cycles > 0 ? macs * static_cast<double>(steps) / (pes * units * run_cycles) : 0.0;
  s["infeed_bytes_per_example"] = host.infeed_bytes_per_example;
  s["bottleneck"] = bottleneckName(run.bottleneck);
  return s;
}

}  // namespace tpusim
