// Fused elementwise groups (frontend/passes/fusion.hpp): each op of a group runs on the
// vector unit over a tile that is already in VMEM, behind the matmul or convolution
// that produced it or behind the group's first elementwise op. Only tensors read
// outside the group are stored; tiles of the group's other inputs are loaded beside it.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "frontend/lower/lowerer.hpp"
#include "frontend/lower/tiling.hpp"
#include "frontend/lower/vector_costs.hpp"
#include "sim/common/error.hpp"

namespace tpusim::lowering {

namespace {

// A reduction that runs inside a group (it joins only by multi-output fusion).
bool isReduction(ir::OpType type) {
  return type == ir::OpType::kReduce || type == ir::OpType::kReduceSumTo;
}

}  // namespace

Lowerer::FusedFootprint Lowerer::fusedFootprint(const std::vector<const ir::Op*>& ops, int leader_out) const {
  FusedFootprint footprint;
  // The group's shape: its leader's (an MXU op's output, or the first elementwise op's); a
  // reduction in the group has another.
  const ir::Shape& shape = m_graph.tensor(leader_out >= 0 ? leader_out : ops.front()->outputs[0]).shape;
  const double elements = std::max<double>(1.0, static_cast<double>(ir::elementCount(shape)));
  std::vector<int> seen = {leader_out};
  for (const ir::Op* op : ops) {
    std::vector<int> tensors = op->inputs;
    tensors.push_back(op->outputs[0]);
    for (int tensor : tensors) {
      if (std::find(seen.begin(), seen.end(), tensor) != seen.end()) continue;
      seen.push_back(tensor);
      const ir::Tensor& t = m_graph.tensor(tensor);
      if (t.shape == shape) {
        footprint.bytes_per_element += static_cast<double>(t.bytes()) / elements;
      } else {
        footprint.resident += t.bytes();
      }
    }
  }
  return footprint;
}

std::vector<uint32_t> Lowerer::emitFusedTile(Fused& fused, const std::string& part, uint64_t part_size,
                                             uint64_t whole_size, const std::function<ByteRange(int)>& range,
                                             const std::function<HbmLayout(int)>& layout, int leader_out,
                                             uint32_t leader_buffer, const std::vector<uint32_t>& leader_deps) {
  const size_t tile = fused.done.size();
  const int slot = static_cast<int>(tile % 2);
  const std::vector<uint32_t> slot_free = tile >= 2 ? fused.done[tile - 2] : std::vector<uint32_t>{};
  const uint32_t core = fused.core;
  std::map<int, std::pair<uint32_t, uint32_t>> here;  // tensor -> buffer and the instruction that fills it
  if (leader_out >= 0) here[leader_out] = {leader_buffer, UINT32_MAX};
  std::vector<uint32_t> done;
  const auto slotOf = [&](const ir::Op& op, int tensor) {
    auto found = fused.slots.find(tensor);
    if (found != fused.slots.end()) return found->second[static_cast<size_t>(slot)];
    const ir::Tensor& t = m_graph.tensor(tensor);
    std::array<uint32_t, 2> buffers{addVmem(op, core, t.name + ".s0", t.dtype, 0),
                                    addVmem(op, core, t.name + ".s1", t.dtype, 0)};
    fused.slots[tensor] = buffers;
    return buffers[static_cast<size_t>(slot)];
  };
  const auto grow = [&](uint32_t buffer, uint64_t bytes) {
    program::Buffer* b = m_chip.mutable_buffers(static_cast<int>(buffer));
    b->set_bytes(std::max(b->bytes(), bytes));
  };
  for (size_t index = 0; index < fused.ops.size(); ++index) {
    const ir::Op& op = *fused.ops[index];
    if (isReduction(op.type)) {  // adds the tile of its input, made earlier in the group
      const int input = op.inputs[0];
      const auto found = here.find(input);
      if (found == here.end()) throw Error(ErrorKind::kInternal, "fused reduction '" + op.name + "' reads no tile");
      std::vector<uint32_t> tile_deps;
      if (found->second.second != UINT32_MAX) tile_deps.push_back(found->second.second);
      if (input == leader_out) tile_deps.insert(tile_deps.end(), leader_deps.begin(), leader_deps.end());
      accumulateFusedTile(fused, index, part, part_size, whole_size, found->second.first, tile_deps, done);
      continue;
    }
    std::vector<uint32_t> reads, deps;
    uint64_t touched = 0;
    uint32_t converts = 0;  // ALU operations per element converting what is loaded or stored
    for (int input : op.inputs) {
      const ir::Tensor& tensor = m_graph.tensor(input);
      auto found = here.find(input);
      if (found != here.end()) {  // the leader's tile or an earlier op's
        reads.push_back(found->second.first);
        if (found->second.second != UINT32_MAX) deps.push_back(found->second.second);
        if (input == leader_out) deps.insert(deps.end(), leader_deps.begin(), leader_deps.end());
        touched += fractionOf(tensor.bytes(), part_size, whole_size);
        continue;
      }
      if (tensor.shape == fused.shape) {  // a tile of an input from outside
        const uint32_t buffer = slotOf(op, input);
        const uint64_t bytes = fractionOf(tensor.bytes(), part_size, whole_size);
        grow(buffer, bytes);
        const uint32_t loaded = loadTensor(op, core, tensor.name + (part.empty() ? "" : "." + part), input,
                                           range(input), layout(input), buffer, slot_free);
        here[input] = {buffer, loaded};
        reads.push_back(buffer);
        deps.push_back(loaded);
        touched += bytes;
        converts += unpackOps(tensor.dtype);
        continue;
      }
      auto kept = fused.resident.find(input);  // another shape: whole, once per core
      if (kept == fused.resident.end()) {
        const uint32_t buffer = addVmem(op, core, tensor.name, tensor.dtype, tensor.bytes());
        const uint32_t loaded = loadTensor(op, core, tensor.name, input, whole(input), tensor.bytes(), buffer, {});
        kept = fused.resident.emplace(input, std::make_pair(buffer, loaded)).first;
      }
      reads.push_back(kept->second.first);
      deps.push_back(kept->second.second);
      touched += tensor.bytes();
    }
    const int output = op.outputs[0];
    const ir::Tensor& out = m_graph.tensor(output);
    const uint32_t out_buffer = slotOf(op, output);
    const uint64_t out_bytes = fractionOf(out.bytes(), part_size, whole_size);
    grow(out_buffer, out_bytes);
    const uint64_t elements = fractionOf(static_cast<uint64_t>(ir::elementCount(out.shape)), part_size, whole_size);
    const bool leaves_chip = !m_on_chip[static_cast<size_t>(output)];
    if (leaves_chip) converts += packOps(out.dtype);
    const uint32_t vpu = vectorInstruction(op, part.empty() ? "vpu" : part + ".vpu", core, program::ELEMENTWISE,
                                           elements, vectorOpsPerElement(op) + converts, out.dtype, reads, out_buffer,
                                           touched + out_bytes, std::move(deps));
    here[output] = {out_buffer, vpu};
    done.push_back(vpu);
    if (leaves_chip) {
      const ByteRange bytes_range = range(output);
      const uint32_t stored = storeOutput(op, core, part, bytes_range, layout(output), out_buffer, {vpu});
      fused.stores[index].push_back({bytes_range, stored});
      done.push_back(stored);
    }
  }
  fused.done.push_back(done);
  return done;
}

void Lowerer::accumulateFusedTile(Fused& fused, size_t index, const std::string& part, uint64_t part_size,
                                  uint64_t whole_size, uint32_t tile_buffer, const std::vector<uint32_t>& tile_deps,
                                  std::vector<uint32_t>& done) {
  const ir::Op& op = *fused.ops[index];
  const ir::Tensor& in = m_graph.tensor(op.inputs[0]);
  const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
  auto acc = fused.accumulators.find(index);
  if (acc == fused.accumulators.end()) {
    const uint32_t buffer = addVmem(op, fused.core, "acc", out.dtype, out.bytes());
    acc = fused.accumulators.emplace(index, std::make_pair(buffer, UINT32_MAX)).first;
  }
  std::vector<uint32_t> deps = tile_deps;
  if (acc->second.second != UINT32_MAX) deps.push_back(acc->second.second);
  const uint64_t elements = fractionOf(static_cast<uint64_t>(ir::elementCount(in.shape)), part_size, whole_size);
  const uint32_t added =
      vectorInstruction(op, part.empty() ? "acc.vpu" : part + ".acc.vpu", fused.core, program::REDUCTION, elements,
                        vectorOpsPerElement(op), out.dtype, {tile_buffer, acc->second.first}, acc->second.first,
                        fractionOf(in.bytes(), part_size, whole_size) + out.bytes(), std::move(deps));
  acc->second.second = added;
  done.push_back(added);
}

void Lowerer::storeFusedPartials(const Fused& fused) {
  for (const auto& [index, acc] : fused.accumulators) {
    const ir::Op& op = *fused.ops[index];
    const uint64_t bytes = m_graph.tensor(op.outputs[0]).bytes();
    auto [partials, fresh] = m_fused_partials.try_emplace(op.outputs[0]);
    if (fresh) {
      // Room for every core's partial result, after the group's other reductions'.
      partials->second.offset = m_fused_scratch_end;
      m_fused_scratch_end += bytes * static_cast<uint64_t>(m_hw.chip().tensor_cores());
    }
    const uint64_t begin = partials->second.offset + bytes * partials->second.stores.size();
    const uint32_t scratch = scratchBuffer(m_fused_scratch_end);
    partials->second.stores.push_back(store(op, fused.core, "partial", scratch, {begin, begin + bytes},
                                            HbmLayout::contiguous(begin, bytes), acc.first, {acc.second}));
  }
}

void Lowerer::finishFused(const Fused& fused, const std::string& tiling, uint64_t tiles, uint64_t vmem_bytes) {
  for (size_t index = 0; index < fused.ops.size(); ++index) {
    const ir::Op& op = *fused.ops[index];
    recordLowering(op, tiling, tiles, vmem_bytes);
    if (isReduction(op.type)) {
      const FusedPartials& partials = m_fused_partials.at(op.outputs[0]);
      finish(op, {addPartialSums(op, m_scratch, partials.offset, partials.stores.size(), partials.stores)});
    } else {
      finish(op, fused.stores[index]);
    }
  }
  m_fused_partials.clear();
  m_fused_scratch_end = 0;
}

void Lowerer::lowerFusedVector(const std::vector<const ir::Op*>& ops) {
  const ir::Op& leader = *ops.front();
  const ir::Tensor& out = m_graph.tensor(leader.outputs[0]);
  const FusedFootprint footprint = fusedFootprint(ops, -1);
  // Rows: the group's output splits along its leading dimensions, or its elements.
  const uint64_t rows = std::max<uint64_t>(1, static_cast<uint64_t>(ir::elementCount(out.shape)));
  const auto row_size = static_cast<uint64_t>(std::ceil(footprint.bytes_per_element));
  const std::vector<Span> shares = splitEvenly({0, rows}, static_cast<uint64_t>(m_hw.chip().tensor_cores()));
  std::vector<std::vector<Access>> stores(ops.size());
  uint64_t tiles = 0, tile_rows = 0;
  for (uint32_t core = 0; core < shares.size(); ++core) {
    Fused fused;
    fused.ops = ops;
    fused.core = core;
    fused.shape = out.shape;
    fused.stores.resize(ops.size());
    tile_rows = rowsPerTile(shares[core].size(), row_size, footprint.resident, vmemBytes(),
                            "fused op '" + leader.name + "'", streamTileBytes());
    const std::vector<Span> core_tiles = tilesOf(shares[core], tile_rows);
    for (size_t t = 0; t < core_tiles.size(); ++t) {
      const Span span = core_tiles[t];
      const auto range = [&](int tensor) { return rowRange(m_graph.tensor(tensor).bytes(), rows, 1, span); };
      const auto layout = [&](int tensor) {
        const uint64_t total = m_graph.tensor(tensor).bytes();
        return contiguousAt(range(tensor).begin, fractionOf(total, span.size(), rows), total);
      };
      emitFusedTile(fused, core_tiles.size() > 1 ? numbered("t", t) : "", span.size(), rows, range, layout, -1,
                    UINT32_MAX, {});
      ++tiles;
    }
    storeFusedPartials(fused);
    for (size_t i = 0; i < ops.size(); ++i)
      stores[i].insert(stores[i].end(), fused.stores[i].begin(), fused.stores[i].end());
  }
  Fused all;
  all.ops = ops;
  all.stores = std::move(stores);
  std::string tiling = numbered("fused ", ops.size());
  tiling.append(" ops, elements ").append(std::to_string(tile_rows)).append(" of ").append(std::to_string(rows));
  tiling.append(" per tile");
  finishFused(all, tiling, tiles, footprint.resident + (tiles > shares.size() ? 2 : 1) * tile_rows * row_size);
}

}  // namespace tpusim::lowering
