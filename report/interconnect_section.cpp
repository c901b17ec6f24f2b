#include "report/interconnect_section.hpp"

#include <sstream>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <utility>
#include <vector>

#include "report/intervals.hpp"
#include "sim/common/error.hpp"
#include "traces/program_format.hpp"

namespace tpusim {

namespace {

const char* collectiveKindName(program::CollectiveKind kind) {
  return kind == program::ALL_REDUCE ? "all_reduce" : "?";
}

const char* algorithmName(program::CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case program::TORUS: return "torus";
    case program::BIDIRECTIONAL_RING: return "bidirectional_ring";
    case program::RING: return "ring";
    case program::HIERARCHICAL: return "hierarchical";
    default: return "?";
  }
}

const char* dimName(int d) {
  return d == 0 ? "x" : d == 1 ? "y" : "z";
}

// A link's traffic over the step, as both ICI and DCN links report it.
void addLinkTraffic(nlohmann::ordered_json& link, const LinkStats& s, double ps_per_cycle, double step_ps) {
  const auto cycles = [&](uint64_t ps) {
    return static_cast<uint64_t>(std::llround(static_cast<double>(ps) / ps_per_cycle));
  };
  link["bytes"] = s.bytes;
  link["messages"] = s.messages;
  link["busy_cycles"] = cycles(s.busy_ps);
  link["utilization"] = step_ps > 0 ? static_cast<double>(s.busy_ps) / step_ps : 0.0;
  link["max_queue_cycles"] = cycles(s.max_queue_ps);
}

// The hosts' NIC links (sim/interconnect/dcn.hpp): per host and direction.
nlohmann::ordered_json dcnEntry(const IciResult& ici, double ps_per_cycle, double step_ps) {
  nlohmann::ordered_json dcn;
  dcn["hosts"] = ici.topology.slices();
  dcn["chips_per_host"] = ici.topology.chipsPerSlice();
  dcn["host_bandwidth_gbps"] = ici.dcn->bandwidth_bytes_per_s / 1e9;
  dcn["latency_us"] = ici.dcn->latency_ns / 1e3;
  uint64_t bytes = 0, max_busy_ps = 0;
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (size_t i = 0; i < ici.dcn_links.size(); ++i) {
    const LinkStats& s = ici.dcn_links[i];
    bytes += s.bytes;
    max_busy_ps = std::max(max_busy_ps, s.busy_ps);
    nlohmann::ordered_json link;
    link["host"] = i / 2;
    link["dir"] = i % 2 == 0 ? "up" : "down";
    addLinkTraffic(link, s, ps_per_cycle, step_ps);
    links.push_back(link);
  }
  dcn["bytes"] = bytes;
  dcn["max_link_utilization"] = step_ps > 0 ? static_cast<double>(max_busy_ps) / step_ps : 0.0;
  dcn["links"] = links;
  return dcn;
}

}  // namespace

uint64_t exposedCommunicationCycles(const program::Program& program, const Timeline& timeline) {
  const program::ChipProgram& chip = program.chips(0);
  std::vector<Interval> communication, compute;
  for (const TimelineEvent& event : timeline.events()) {
    const program::Unit unit = chip.instructions(static_cast<int>(event.instruction)).unit();
    (unit == program::ICI ? communication : compute).emplace_back(event.start_cycle, event.end_cycle);
  }
  return lengthOutside(unionOf(std::move(communication)), unionOf(std::move(compute)));
}

namespace {

uint32_t tensorParallelOf(const program::Program& program) {
  return program.tensor_parallel() < 1 ? 1 : program.tensor_parallel();
}

}  // namespace

nlohmann::ordered_json parallelismEntry(const program::Program& program) {
  nlohmann::ordered_json entry;
  const uint32_t chips = program.replicas() < 1 ? 1 : program.replicas();
  entry["dp"] = chips / tensorParallelOf(program);
  entry["tp"] = tensorParallelOf(program);
  entry["pp"] = 1;
  return entry;
}

nlohmann::ordered_json interconnectEntry(const program::Program& program, const SimResult& result) {
  if (!result.ici) throw Error(ErrorKind::kInternal, "report: an interconnect section needs a run on a slice");
  const IciResult& ici = *result.ici;
  const Topology& topology = ici.topology;
  const double ps_per_cycle = 1e12 / result.clock_hz;
  const double step_ps = static_cast<double>(result.total_cycles) * ps_per_cycle;
  nlohmann::ordered_json entry;
  entry["topology"] = topologyKindName(topology.kind());
  entry["shape"] = topology.shapeString();
  entry["chips"] = topology.numChips();
  entry["replicas"] = program.replicas();
  // Tensor-parallel chips share their examples: a batch per data-parallel replica.
  entry["global_batch"] = program.batch() * (program.replicas() / tensorParallelOf(program));
  entry["link_bandwidth_gbps"] = ici.link.bandwidth_bytes_per_s / 1e9;
  entry["buffer_bytes"] = ici.link.buffer_bytes;
  entry["directed_links"] = topology.numLinks();
  if (topology.slices() > 1) entry["hosts"] = topology.slices();
  // Which network model ran: every chip and link, or one per class of equivalent ones.
  nlohmann::ordered_json model;
  model["kind"] = ici.full_reason.empty() ? "symmetric" : "full";
  model["simulated_chips"] = ici.simulated.numChips();
  if (topology.slices() > 1) model["simulated_hosts"] = ici.simulated.slices();
  if (ici.full_reason.empty()) {
    model["period"] = ici.simulated.shapeString();
  } else {
    model["why_full"] = ici.full_reason;
  }
  entry["network_model"] = model;

  uint64_t bytes = 0, busy_ps = 0, max_busy_ps = 0, stalled_ps = 0;
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (LinkId id = 0; id < topology.numLinkSlots(); ++id) {
    if (!topology.linkExists(id)) continue;
    const LinkStats& s = ici.links[static_cast<size_t>(id)];
    bytes += s.bytes;
    stalled_ps += s.stalled_ps;
    busy_ps += s.busy_ps;
    max_busy_ps = std::max(max_busy_ps, s.busy_ps);
    const Coords at = topology.coords(topology.linkSource(id));
    nlohmann::ordered_json link;
    link["src"] = topology.linkSource(id);
    link["dst"] = topology.linkDest(id);
    link["dim"] = dimName(topology.linkDim(id));
    link["dir"] = topology.linkDir(id) > 0 ? "+" : "-";
    link["x"] = at[0];
    link["y"] = at[1];
    link["z"] = at[2];
    addLinkTraffic(link, s, ps_per_cycle, step_ps);
    link["stalled_cycles"] = static_cast<uint64_t>(std::llround(static_cast<double>(s.stalled_ps) / ps_per_cycle));
    links.push_back(link);
  }
  entry["bytes"] = bytes;
  entry["stalled_cycles"] = static_cast<uint64_t>(std::llround(static_cast<double>(stalled_ps) / ps_per_cycle));
  const double link_count = static_cast<double>(topology.numLinks());
  entry["mean_link_utilization"] = step_ps > 0 ? static_cast<double>(busy_ps) / (link_count * step_ps) : 0.0;
  entry["max_link_utilization"] = step_ps > 0 ? static_cast<double>(max_busy_ps) / step_ps : 0.0;

  const program::ChipProgram& chip = program.chips(0);
  nlohmann::ordered_json collectives = nlohmann::ordered_json::array();
  uint64_t collective_bytes = 0;
  std::vector<Interval> in_flight;
  for (const TimelineEvent& event : result.timeline.events()) {
    const program::Instruction& ins = chip.instructions(static_cast<int>(event.instruction));
    if (ins.unit() != program::ICI) continue;
    const program::Collective& c = ins.collective();
    nlohmann::ordered_json record;
    record["name"] = instructionName(ins);
    record["op"] = ins.op();
    record["kind"] = collectiveKindName(c.kind());
    record["algorithm"] = algorithmName(c.algorithm());
    record["bytes"] = c.bytes();
    record["replicas"] = c.replicas();
    record["group_stride"] = c.group_stride() < 1 ? 1 : c.group_stride();
    record["start_cycle"] = event.start_cycle;
    record["end_cycle"] = event.end_cycle;
    record["time_s"] = static_cast<double>(event.end_cycle - event.start_cycle) / result.clock_hz;
    collectives.push_back(record);
    collective_bytes += c.bytes();
    in_flight.emplace_back(event.start_cycle, event.end_cycle);
  }
  entry["collective_count"] = collectives.size();
  entry["collective_bytes"] = collective_bytes;
  entry["communication_cycles"] = lengthOf(unionOf(std::move(in_flight)));
  entry["exposed_communication_cycles"] = exposedCommunicationCycles(program, result.timeline);
  entry["collectives"] = collectives;
  if (ici.ocs.used) {
    nlohmann::ordered_json ocs;
    ocs["cube_edge"] = ici.ocs_config.cube_edge;
    ocs["pod_cubes"] = ici.ocs_config.pod_cubes;
    ocs["failed_cubes"] = ici.ocs_config.failed_cubes;
    ocs["cubes"] = ici.ocs.cubes;
    ocs["ocs_links"] = ici.ocs.ocs_links.size();
    ocs["insertion_latency_ns"] = ici.ocs_config.insertion_latency_ns;
    ocs["reconfiguration_s"] = ici.ocs_config.reconfiguration_s;
    entry["ocs"] = ocs;
  }
  if (ici.dcn) entry["dcn"] = dcnEntry(ici, ps_per_cycle, step_ps);
  entry["links"] = links;
  return entry;
}

std::string linksCsv(const nlohmann::ordered_json& report) {
  if (!report.contains("interconnect")) throw Error(ErrorKind::kInternal, "links.csv: the report has no interconnect");
  std::ostringstream file;
  file << "src,dst,dim,dir,x,y,z,bytes,busy_cycles,utilization,stalled_cycles\n";
  char utilization[32];
  for (const auto& link : report.at("interconnect").at("links")) {
    std::snprintf(utilization, sizeof(utilization), "%.6f", link.at("utilization").get<double>());
    file << link.at("src").get<int>() << ',' << link.at("dst").get<int>() << ',' << link.at("dim").get<std::string>()
         << ',' << link.at("dir").get<std::string>() << ',' << link.at("x").get<int>() << ',' << link.at("y").get<int>()
         << ',' << link.at("z").get<int>() << ',' << link.at("bytes").get<uint64_t>() << ','
         << link.at("busy_cycles").get<uint64_t>() << ',' << utilization << ','
         << link.value("stalled_cycles", uint64_t{0}) << '\n';  // 0 in reports from before credits
  }
  return file.str();
}

}  // namespace tpusim
