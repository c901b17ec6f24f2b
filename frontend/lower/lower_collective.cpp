// Lowering of collectives across replicas (an AllReduce placed on the ICI by the
// data_parallel pass): one Collective instruction on the chip's interconnect port,
// then the adds of the reduction on the vector units, split over the cores.
//
// Consecutive all-reduces share one collective up to LowerOptions::all_reduce_bucket_bytes
// (0: one each), as DDP's gradient buckets and XLA's all-reduce combiner do; a bucket is
// launched when it is full, when an op reads one of its results, or at the end.
// The collective reads the gradients' HBM buffers once every store that wrote them has
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
#include "sim/interconnect/replica_groups.hpp"

namespace tpusim::lowering {

namespace {

program::CollectiveAlgorithm toProgramAlgorithm(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kTorus: return program::TORUS;
    case AllReduceAlgorithm::kBidirectionalRing: return program::BIDIRECTIONAL_RING;
    case AllReduceAlgorithm::kRing: return program::RING;
    case AllReduceAlgorithm::kHierarchical: return program::HIERARCHICAL;
  }
  return program::COLLECTIVE_ALGORITHM_UNSPECIFIED;
}

}  // namespace

void Lowerer::lowerCollective(const ir::Op& op) {
  if (op.type != ir::OpType::kAllReduce || op.reduction != ir::Reduction::kSum) {
    throw Error(ErrorKind::kUnsupported, "only summing all-reduces run on the interconnect");
  }
  if (!m_topology || m_topology->numChips() % (op.replicas * op.group_stride) != 0) {
    throw Error(ErrorKind::kInvalidConfig,
                "an all-reduce across " + std::to_string(op.replicas) +
                    " replicas needs an ICI slice of a multiple of as many chips (--topology)");
  }
  const DType dtype = m_graph.tensor(op.inputs[0]).dtype;
  // A bucket holds one dtype and one group shape.
  if (!m_bucket.empty()) {
    const ir::Op& head = *m_bucket[0];
    if (m_graph.tensor(head.inputs[0]).dtype != dtype || head.replicas != op.replicas ||
        head.group_stride != op.group_stride) {
      emitBucket();
    }
  }
  m_bucket.push_back(&op);
  m_bucket_bytes += m_graph.tensor(op.inputs[0]).bytes();
  if (m_bucket_bytes >= m_bucket_limit) emitBucket();
}

void Lowerer::emitBucket() {
  if (m_bucket.empty()) return;
  const ir::Op& first = *m_bucket[0];
  const DType dtype = m_graph.tensor(first.inputs[0]).dtype;
  const uint64_t bytes = m_bucket_bytes;
  // Across hosts the gradients of the whole slice go over the DCN: torus within each host, a
  // ring over the hosts. A group inside the slice (tensor parallel) keeps its ICI algorithm.
  const AllReduceAlgorithm algorithm =
      m_topology->slices() > 1 && first.replicas == m_topology->numChips()
          ? AllReduceAlgorithm::kHierarchical
          : groupAlgorithm(*m_topology, first.replicas, first.group_stride,
                           allReduceAlgorithmFromName(m_hw.ici().all_reduce_algorithm()));

  program::Instruction& ins = newInstruction(first, "all_reduce", program::ICI, 0, 0);
  program::Collective* collective = ins.mutable_collective();
  collective->set_kind(program::ALL_REDUCE);
  collective->set_bytes(bytes);
  collective->set_dtype(toProgramDType(dtype));
  collective->set_replicas(static_cast<uint32_t>(first.replicas));
  collective->set_algorithm(toProgramAlgorithm(algorithm));
  if (first.group_stride > 1) collective->set_group_stride(static_cast<uint32_t>(first.group_stride));
  ins.set_bytes(bytes);
  std::vector<uint32_t> deps;
  for (const ir::Op* op : m_bucket) {
    ins.add_reads(hbmOf(op->inputs[0]));
    ins.add_writes(hbmOf(op->outputs[0]));
    for (const Access& writer : m_hazards[hbmOf(op->inputs[0])].writers) deps.push_back(writer.instruction);
    const Hazards& target = m_hazards[hbmOf(op->outputs[0])];
    for (const Access& access : target.readers) deps.push_back(access.instruction);
    for (const Access& access : target.writers) deps.push_back(access.instruction);
    if (m_plan.reuses[static_cast<size_t>(op->outputs[0])]) {
      deps.insert(deps.end(), m_loads_before_op.begin(), m_loads_before_op.end());
    }
  }
  addDeps(ins, std::move(deps));
  const uint32_t collective_id = ins.id();

  // This chip is replica 0; by symmetry every replica adds as much (uneven chunks aside).
  // A bucket's adds are shared out by the members' bytes.
  const uint64_t reduced = groupReducedBytes(*m_topology, first.replicas, first.group_stride, bytes,
                                             allReduceAlgorithmFromName(m_hw.ici().all_reduce_algorithm()));
  for (const ir::Op* op : m_bucket) {
    const uint64_t member = m_graph.tensor(op->inputs[0]).bytes();
    const uint64_t elements = fractionOf(reduced, member, bytes) / dtypeBytes(dtype);
    // Until the adds are emitted, a reader of the output waits for the collective.
    finish(*op, {{whole(op->outputs[0]), collective_id}});
    m_pending_reductions.push_back({op, collective_id, elements});
    std::string tiling = std::string("all_reduce ") + allReduceAlgorithmName(algorithm) + " over " +
                         std::to_string(op->replicas) + " replicas";
    if (op->group_stride > 1) tiling.append(" ").append(std::to_string(op->group_stride)).append(" chips apart");
    tiling.append(", ").append(std::to_string(elements)).append(" elements added per chip");
    if (m_bucket.size() > 1) {
      tiling += ", in a bucket of " + std::to_string(m_bucket.size()) + " gradients (" + std::to_string(bytes) +
                " bytes) led by " + first.name;
    }
    recordLowering(*op, tiling, 1, 0);
  }
  m_bucket.clear();
  m_bucket_bytes = 0;
}

void Lowerer::emitPendingReductions(const ir::Op* reader, const std::vector<const ir::Op*>& fused) {
  const auto reads = [&](const ir::Op& op, int tensor) {
    return std::find(op.inputs.begin(), op.inputs.end(), tensor) != op.inputs.end();
  };
  for (const ir::Op* member : m_bucket) {
    bool needed = reader == nullptr || reads(*reader, member->outputs[0]);
    for (const ir::Op* fused_op : fused) needed = needed || reads(*fused_op, member->outputs[0]);
    if (needed) {
      emitBucket();
      break;
    }
  }
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
      const uint32_t add =
          vectorInstruction(op, "reduce", core, program::ELEMENTWISE, part.size(), 1, out.dtype, {hbmOf(op.inputs[0])},
                            hbmOf(out_tensor), part.size() * dtypeBytes(out.dtype), {pending.collective});
      writers.push_back({whole(out_tensor), add});
      ++core;
    }
    if (!writers.empty()) finish(op, std::move(writers));
  }
  m_pending_reductions = std::move(kept);
}

}  // namespace tpusim::lowering
