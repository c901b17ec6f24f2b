#include "sim/interconnect/transfer_plan.hpp"

#include <limits>

#include "sim/common/error.hpp"

namespace tpusim {

TransferId TransferPlan::addTransfer(ChipId src, ChipId dst, uint64_t bytes, std::span<const TransferId> deps,
                                     uint64_t earliest_ps, int way) {
  if (src < 0 || src >= m_topology.numChips() || dst < 0 || dst >= m_topology.numChips()) {
    throw Error(ErrorKind::kInternal, "transfer plan: a chip outside the topology");
  }
  if (m_records.size() >= static_cast<size_t>(std::numeric_limits<TransferId>::max())) {
    throw Error(ErrorKind::kResource, "ICI: a collective of more than 2^31 transfers");
  }
  const auto id = static_cast<TransferId>(m_records.size());
  const auto begin = static_cast<uint32_t>(m_deps.size());
  for (const TransferId dep : deps) {
    if (dep < 0 || dep >= id) throw Error(ErrorKind::kInternal, "transfer plan: a dependency on a later transfer");
    m_deps.push_back(dep);
  }
  m_records.push_back({src, dst, bytes, earliest_ps, way, begin, static_cast<uint32_t>(m_deps.size())});
  return id;
}

}  // namespace tpusim
