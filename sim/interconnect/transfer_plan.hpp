// A collective's link transfers recorded, not simulated: what a TransferSink was asked
// for, in order, with each transfer's dependencies as record indices. The slice network
// (sim/interconnect/slice_network.hpp) records a collective to find its symmetry
// (sim/interconnect/symmetry.hpp) before simulating only one representative of each
// class of equivalent transfers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/interconnect/transfer_sink.hpp"

namespace tpusim {

class TransferPlan : public TransferSink {
 public:
  struct Record {
    ChipId src, dst;
    uint64_t bytes;
    uint64_t earliest_ps;
    int32_t way;
    uint32_t deps_begin, deps_end;  // into deps()
  };

  TransferPlan(const Topology& topology, bool has_dcn) : m_topology(topology), m_has_dcn(has_dcn) {}

  // Records the transfer and returns its index; deps must be earlier records.
  TransferId addTransfer(ChipId src, ChipId dst, uint64_t bytes, std::span<const TransferId> deps = {},
                         uint64_t earliest_ps = 0, int way = 0) override;
  const Topology& topology() const override { return m_topology; }
  bool hasDcn() const override { return m_has_dcn; }

  size_t size() const { return m_records.size(); }
  const Record& record(size_t index) const { return m_records[index]; }
  std::span<const TransferId> deps(const Record& record) const {
    return std::span<const TransferId>(m_deps).subspan(record.deps_begin, record.deps_end - record.deps_begin);
  }

 private:
  const Topology& m_topology;
  bool m_has_dcn;
  std::vector<Record> m_records;
  std::vector<TransferId> m_deps;
};

}  // namespace tpusim
