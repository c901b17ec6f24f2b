// The chip's interconnect (ICI) port: runs the Program's Collective instructions
// over the pod's network (sim/chip/pod.hpp).
//
// Like every unit it takes its queue in order and waits until the head's
// dependencies have retired. Unlike the others it does not wait for a collective
// to finish before starting the next (XLA's asynchronous all-reduce start/done):
// several can be in flight and contend for the same links. A collective retires
// when its last byte has arrived, rounded up to the chip's clock. Stats: busy
// cycles (at least one collective in flight), dependency wait (the head waiting
// with none in flight, so busy + wait + idle = total), instructions, bytes,
// utilization and idle cycles, named like the other units'.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <systemc>

#include "sim/common/exec_unit.hpp"

namespace tpusim {

class IciUnit;

// What runs a collective: the pod, over the network of all replicas.
class CollectiveNetwork {
 public:
  virtual ~CollectiveNetwork() = default;
  // Starts the collective of `instruction` for every replica at the current time;
  // calls unit.complete(instruction) at the cycle its last byte has arrived.
  virtual void launch(const program::Instruction& instruction, IciUnit& unit) = 0;
};

class IciUnit : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(IciUnit);
  IciUnit(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context,
          CollectiveNetwork& network);

  // Where core 0's sequencer writes its ICI instructions (blocking while full).
  sc_core::sc_fifo<const program::Instruction*>& queue() { return m_queue; }
  // Called by the network when the collective has delivered its last byte (now).
  void complete(const program::Instruction& instruction);

 private:
  void run();

  UnitContext m_context;
  CollectiveNetwork& m_network;
  uint32_t m_timeline_id;
  sc_core::sc_fifo<const program::Instruction*> m_queue;
  std::map<uint32_t, TimelineEvent> m_in_flight;  // by instruction id
  uint64_t m_busy_since = 0;
  uint64_t m_idle_since = 0;  // when the last collective in flight finished
  Counter& m_busy;
  Counter& m_dependency_wait;
  Counter& m_instructions;
  Counter& m_bytes;
};

}  // namespace tpusim
