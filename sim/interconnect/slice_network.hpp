// The network of a data- or tensor-parallel slice (sim/chip/pod.hpp): a collective that
// chip 0 starts runs in every replica group of its shape at once.
//
// It is simulated on the whole slice, or, when the slice, its link latencies and every
// collective shape the Program will start are symmetric (sim/interconnect/symmetry.hpp),
// on the quotient slice of one period: the same link and collective times, with a
// fraction of the transfers. The per-link counters of a link are then its
// representative's, and the totals count every link of the slice.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "sim/common/stats.hpp"
#include "sim/interconnect/collectives.hpp"
#include "sim/interconnect/network.hpp"
#include "sim/interconnect/symmetry.hpp"

namespace tpusim {

// An all-reduce over every group of `replicas` chips `stride` apart (replica_groups.hpp).
struct CollectiveShape {
  int64_t replicas = 1;
  int64_t stride = 1;
  uint64_t bytes = 0;
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::kTorus;
  uint32_t element_bytes = 4;

  auto key() const { return std::tuple(replicas, stride, bytes, static_cast<int>(algorithm), element_bytes); }
};

struct SliceNetworkOptions {
  IciLinkConfig link;
  RoutingMode routing = RoutingMode::kDimensionOrder;
  std::optional<DcnLinkConfig> dcn;   // joins the slices' hosts
  std::vector<LinkId> latency_links;  // links through an optical circuit switch
  uint64_t latency_ps = 0;            // the extra latency of each
  bool symmetry = true;               // false: always simulate every chip and link (ici.symmetry off)
};

class SliceNetwork {
 public:
  // `shapes`: every collective the run may start (another is an internal error when reduced).
  SliceNetwork(const Topology& slice, const SliceNetworkOptions& options, std::span<const CollectiveShape> shapes);

  // Starts the collective in all its groups now (after advanceTo(now)); returns its group id.
  GroupId start(const CollectiveShape& shape);

  void advanceTo(uint64_t time_ps) { m_network.advanceTo(time_ps); }
  uint64_t nextEventTime() const { return m_network.nextEventTime(); }
  std::vector<GroupId> takeFinishedGroups() { return m_network.takeFinishedGroups(); }
  uint64_t groupDoneTime(GroupId group) const { return m_network.groupDoneTime(group); }

  const Topology& topology() const { return m_slice; }
  const IciLinkConfig& config() const { return m_network.config(); }
  // A link of the slice (its representative's counters when reduced).
  const LinkStats& linkStats(LinkId link) const;
  bool hasDcn() const { return m_network.hasDcn(); }
  const DcnLinkConfig& dcnConfig() const { return m_network.dcnConfig(); }
  // A host's NIC link (its representative's counters when reduced).
  const LinkStats& dcnLinkStats(int host, bool up) const;
  uint64_t makespan() const { return m_network.makespan(); }
  size_t memoryBytes() const { return m_network.memoryBytes(); }

  // Whether the quotient was simulated, its shape, and why not when it was not.
  bool reduced() const { return m_reduced; }
  const Topology& simulated() const { return m_network.topology(); }
  const std::string& fullReason() const { return m_full_reason; }

  // Network::registerTotals over every link of the slice.
  void registerTotals(StatsRegistry& registry, const std::string& prefix) const;

 private:
  using Key = decltype(CollectiveShape{}.key());

  struct Choice {
    Topology topology;        // the slice, or its quotient
    std::string full_reason;  // why the slice itself ("" for the quotient)
    std::map<Key, RoutedPlan> plans;
  };
  static Choice choose(const Topology& slice, const SliceNetworkOptions& options,
                       std::span<const CollectiveShape> shapes);
  SliceNetwork(const Topology& slice, const SliceNetworkOptions& options, Choice choice);
  // Every group's all-reduce of the shape, added to `sink`.
  static void recordInto(TransferSink& sink, const Topology& slice, const CollectiveShape& shape);

  Topology m_slice;
  bool m_reduced;
  std::string m_full_reason;
  Network m_network;
  std::map<Key, RoutedPlan> m_plans;  // reduced: each shape's representatives
};

}  // namespace tpusim
