// Lowering of collectives across replicas (an AllReduce placed on the ICI by the
// data_parallel pass): one Collective instruction on the chip's interconnect port,
// then the adds of the reduction on the vector units, split over the cores.
//
// The collective reads the gradient's HBM buffer once every store that wrote it has
// finished, and writes the output buffer (after the loads and stores of whatever the
// memory plan put there before). How many elements this chip adds comes from the
// algorithm's closed form (sim/interconnect/collectives.hpp, allReduceReducedBytes):
// the same count the network's decomposition gives. The adds are charged after the
// collective, one ALU operation per element, emitted just before the first op that
// reads the reduced tensor: the VPU runs its queue in order, so adds emitted with the
// collective would hold up the rest of the backward pass until the collective ended.
// The data path of the reduction through HBM and VMEM is not modelled (the
// collective's transfers are the interconnect's).
#include <algorithm>

#include "frontend/lower/lowerer.hpp"
#include "sim/common/error.hpp"
#include "sim/interconnect/collectives.hpp"

namespace tpusim::lowering {

namespace {

program::CollectiveAlgorithm toProgramAlgorithm(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kTorus: return program::TORUS;
    case AllReduceAlgorithm::kBidirectionalRing: return program::BIDIRECTIONAL_RING;
    case AllReduceAlgorithm::kRing: return program::RING;
  }
  return program::COLLECTIVE_ALGORITHM_UNSPECIFIED;
}

}  // namespace

void Lowerer::lowerCollective(const ir::Op& op) {
  if (op.type != ir::OpType::kAllReduce || op.reduction != ir::Reduction::kSum) {
    throw Error(ErrorKind::kUnsupported, "only summing all-reduces run on the interconnect");
  }
  if (!m_topology || op.replicas != m_topology->numChips()) {
    throw Error(ErrorKind::kInvalidConfig, "an all-reduce across " + std::to_string(op.replicas) +
                                               " replicas needs an ICI slice of as many chips (--topology)");
  }
  const ir::Tensor& in = m_graph.tensor(op.inputs[0]);
  const uint64_t bytes = in.bytes();
  const AllReduceAlgorithm algorithm = allReduceAlgorithmFromName(m_hw.ici().all_reduce_algorithm());

  program::Instruction& ins = newInstruction(op, "all_reduce", program::ICI, 0, 0);
  program::Collective* collective = ins.mutable_collective();
  collective->set_kind(program::ALL_REDUCE);
  collective->set_bytes(bytes);
  collective->set_dtype(toProgramDType(in.dtype));
  collective->set_replicas(static_cast<uint32_t>(op.replicas));
  collective->set_algorithm(toProgramAlgorithm(algorithm));
  ins.set_bytes(bytes);
  ins.add_reads(hbmOf(op.inputs[0]));
  ins.add_writes(hbmOf(op.outputs[0]));
  std::vector<uint32_t> deps;
  for (const Access& writer : m_hazards[hbmOf(op.inputs[0])].writers) deps.push_back(writer.instruction);
  const Hazards& target = m_hazards[hbmOf(op.outputs[0])];
  for (const Access& access : target.readers) deps.push_back(access.instruction);
  for (const Access& access : target.writers) deps.push_back(access.instruction);
  if (m_plan.reuses[static_cast<size_t>(op.outputs[0])]) {
    deps.insert(deps.end(), m_loads_before_op.begin(), m_loads_before_op.end());
  }
  addDeps(ins, std::move(deps));
  const uint32_t collective_id = ins.id();

  // This chip is replica 0; by symmetry every replica adds as much (uneven chunks aside).
  const uint64_t elements = allReduceReducedBytes(*m_topology, bytes, algorithm, 0) / dtypeBytes(in.dtype);
  // Until the adds are emitted, a reader of the output waits for the collective.
  finish(op, {{whole(op.outputs[0]), collective_id}});
  m_pending_reductions.push_back({&op, collective_id, elements});
  recordLowering(op, std::string("all_reduce ") + allReduceAlgorithmName(algorithm) + " over " +
                         std::to_string(op.replicas) + " replicas, " + std::to_string(elements) +
                         " elements added per chip",
                 1, 0);
}

void Lowerer::emitPendingReductions(const ir::Op* reader, const std::vector<const ir::Op*>& fused) {
  const auto reads = [&](const ir::Op& op, int tensor) {
    return std::find(op.inputs.begin(), op.inputs.end(), tensor) != op.inputs.end();
  };
  std::vector<PendingReduction> kept;
  for (const PendingReduction& pending : m_pending_reductions) {
    const int out_tensor = pending.op->outputs[0];
    bool needed = reader == nullptr || reads(*reader, out_tensor);
    for (const ir::Op* member : fused) needed = needed || reads(*member, out_tensor);
    if (!needed) {
      kept.push_back(pending);
      continue;
    }
    const ir::Op& op = *pending.op;
    const ir::Tensor& out = m_graph.tensor(out_tensor);
    std::vector<Access> writers;
    const uint64_t cores = static_cast<uint64_t>(m_hw.chip().tensor_cores());
    uint32_t core = 0;
    for (const Span part : splitEvenly({0, pending.elements}, cores)) {
      if (part.size() == 0) continue;
      const uint32_t add = vectorInstruction(op, "reduce", core, program::ELEMENTWISE, part.size(), 1, out.dtype,
                                             {hbmOf(op.inputs[0])}, hbmOf(out_tensor),
                                             part.size() * dtypeBytes(out.dtype), {pending.collective});
      writers.push_back({whole(out_tensor), add});
      ++core;
    }
    if (!writers.empty()) finish(op, std::move(writers));
  }
  m_pending_reductions = std::move(kept);
}

}  // namespace tpusim::lowering
