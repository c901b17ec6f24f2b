// ICI model speed: a 64 MiB all-reduce on 3D tori of 64, 512 and 4096 chips
// (dimension by dimension, bidirectional rings, every link transfer through
// the FCFS link model), and a ring all-reduce over all chips in id order, whose
// row-to-row steps take several hops and contend for links (up to 512 chips); and the
// torus all-reduce through the pod's network, which simulates one chip per symmetry class.
// Run: build/bench/ici_bench (figures depend on the machine; quote medians).
#include <benchmark/benchmark.h>

#include <algorithm>

#include "sim/interconnect/collectives.hpp"
#include "sim/interconnect/slice_network.hpp"

namespace {

constexpr uint64_t kBytes = 64ull << 20;

// tpuv4's links: 50 GB/s per direction, 1 us per hop.
tpusim::IciLinkConfig tpuv4Links() {
  return tpusim::iciLinkConfigOf(tpusim::HardwareParams::load("tpuv4"));
}

void allReduceOnTorus(benchmark::State& state, tpusim::AllReduceAlgorithm algorithm) {
  const int k = static_cast<int>(state.range(0));
  const tpusim::Topology torus(tpusim::TopologyKind::kTorus3d, {k, k, k});
  const tpusim::IciLinkConfig links = tpuv4Links();
  uint64_t simulated_ps = 0, transfers = 0, hops = 0, model_bytes = 0;
  for (auto _ : state) {
    tpusim::Network net(torus, links);
    const tpusim::Collective c = tpusim::allReduce(net, tpusim::allChips(torus), kBytes, algorithm);
    net.run();
    simulated_ps = c.finishTime(net);
    transfers = net.numTransfers();
    hops = net.numHops();
    model_bytes = net.memoryBytes();
    benchmark::DoNotOptimize(simulated_ps);
  }
  state.counters["chips"] = static_cast<double>(torus.numChips());
  state.counters["transfers"] = static_cast<double>(transfers);
  // The network model's own footprint (transfers, edges, events, links: Network::memoryBytes).
  state.counters["model_MiB"] = static_cast<double>(model_bytes) / (1 << 20);
  state.counters["link_hops"] = static_cast<double>(hops);
  state.counters["simulated_us"] = static_cast<double>(simulated_ps) / 1e6;
  state.counters["s_per_hop"] = benchmark::Counter(
      static_cast<double>(hops), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_TorusAllReduce64MiB(benchmark::State& state) {
  allReduceOnTorus(state, tpusim::AllReduceAlgorithm::kTorus);
}
BENCHMARK(BM_TorusAllReduce64MiB)->Arg(4)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond);

// The same all-reduce through the pod's network (sim/interconnect/slice_network.hpp), which
// finds the translation symmetry and simulates the quotient slice: the same times.
void BM_SymmetricTorusAllReduce64MiB(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  const tpusim::Topology torus(tpusim::TopologyKind::kTorus3d, {k, k, k});
  tpusim::SliceNetworkOptions options;
  options.link = tpuv4Links();
  const tpusim::CollectiveShape shape{torus.numChips(), 1, kBytes, tpusim::AllReduceAlgorithm::kTorus, 4};
  uint64_t simulated_ps = 0, simulated_chips = 0;
  for (auto _ : state) {
    tpusim::SliceNetwork net(torus, options, std::vector<tpusim::CollectiveShape>{shape});
    const tpusim::GroupId group = net.start(shape);
    net.advanceTo(tpusim::Network::kNever);
    simulated_ps = net.groupDoneTime(group);
    simulated_chips = static_cast<uint64_t>(net.simulated().numChips());
    benchmark::DoNotOptimize(simulated_ps);
  }
  state.counters["chips"] = static_cast<double>(torus.numChips());
  state.counters["simulated_chips"] = static_cast<double>(simulated_chips);
  state.counters["simulated_us"] = static_cast<double>(simulated_ps) / 1e6;
}
BENCHMARK(BM_SymmetricTorusAllReduce64MiB)->Arg(4)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond);

// Two 32 MiB torus all-reduces at once (two gradient buckets): every link
// is shared by both, step by step, so each waits for the other's chunks.
void BM_TwoTorusAllReduces32MiB(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  const tpusim::Topology torus(tpusim::TopologyKind::kTorus3d, {k, k, k});
  const tpusim::IciLinkConfig links = tpuv4Links();
  uint64_t simulated_ps = 0, hops = 0, max_queue_ps = 0, model_bytes = 0;
  for (auto _ : state) {
    tpusim::Network net(torus, links);
    const tpusim::Group all = tpusim::allChips(torus);
    const tpusim::Collective a = tpusim::allReduce(net, all, kBytes / 2, tpusim::AllReduceAlgorithm::kTorus);
    const tpusim::Collective b = tpusim::allReduce(net, all, kBytes / 2, tpusim::AllReduceAlgorithm::kTorus);
    net.run();
    simulated_ps = std::max(a.finishTime(net), b.finishTime(net));
    hops = net.numHops();
    max_queue_ps = 0;
    for (tpusim::LinkId l = 0; l < torus.numLinkSlots(); ++l) {
      max_queue_ps = std::max(max_queue_ps, net.linkStats(l).max_queue_ps);
    }
    model_bytes = net.memoryBytes();
    benchmark::DoNotOptimize(simulated_ps);
  }
  state.counters["model_MiB"] = static_cast<double>(model_bytes) / (1 << 20);
  state.counters["chips"] = static_cast<double>(torus.numChips());
  state.counters["link_hops"] = static_cast<double>(hops);
  state.counters["simulated_us"] = static_cast<double>(simulated_ps) / 1e6;
  state.counters["max_queue_us"] = static_cast<double>(max_queue_ps) / 1e6;
}
BENCHMARK(BM_TwoTorusAllReduces32MiB)->Arg(16)->Unit(benchmark::kMillisecond);

void BM_RingAllReduce64MiB(benchmark::State& state) {
  allReduceOnTorus(state, tpusim::AllReduceAlgorithm::kRing);
}
// 2 p (p - 1) transfers: 33.5 M at 4096 chips (about 30 s), so up to 512 here.
BENCHMARK(BM_RingAllReduce64MiB)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
