// Vector-unit work and gathers, tiled along rows that fit VMEM.
//
// An op's output is viewed as `rows` independent rows (the product of its leading
// dimensions that the op does not mix). Rows are split evenly over the cores, and
// each core streams its share through VMEM in double-buffered tiles. An operand laid
// out along the same rows moves with them; one broadcast along them is loaded once per
// core and kept. Reductions over the leading dimension stream the input instead and
// keep the output as an accumulator; with several cores, each one's partial result
// goes to scratch HBM and core 0 adds them up.
#include <algorithm>
#include <cmath>

#include "frontend/lower/lowerer.hpp"
#include "frontend/lower/tiling.hpp"
#include "frontend/lower/vector_costs.hpp"
#include "sim/common/error.hpp"

namespace tpusim::lowering {

namespace {

using ir::OpType;

enum class Movement {
  kWhole,    // loaded whole, once per core
  kRows,     // contiguous along the rows: a tile moves its rows' share, reading those bytes
  kStrided,  // a tile moves its share of the bytes, gathered from anywhere in the tensor
};

struct VectorPlan {
  uint64_t rows = 1;
  uint64_t elements = 0;  // vector-unit elements over all rows
  program::VectorKind kind = program::ELEMENTWISE;
  std::vector<Movement> movement;  // per input
  std::vector<uint64_t> bytes;     // per input: what its loads move over all rows
  bool accumulate = false;         // rows are the first input's; the output is an accumulator
};

uint64_t rowsOf(const ir::Shape& shape, size_t dims) {
  uint64_t rows = 1;
  for (size_t d = 0; d < std::min(dims, shape.size()); ++d) rows *= static_cast<uint64_t>(shape[d]);
  return rows;
}

// The leading output dimensions that every operand either shares or is broadcast along
// (numpy alignment from the right), the `skipped` operands aside.
size_t broadcastPrefix(const ir::Graph& graph, const ir::Op& op, const ir::Shape& out,
                       const std::vector<bool>& skipped) {
  size_t prefix = out.size();
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (skipped[i]) continue;
    const ir::Shape& shape = graph.tensor(op.inputs[i]).shape;
    if (shape.size() > out.size()) return 0;
    const size_t pad = out.size() - shape.size();
    size_t equal = 0, ones = 0;
    while (equal < out.size() && (equal < pad ? out[equal] == 1 : shape[equal - pad] == out[equal])) ++equal;
    while (ones < out.size() && (ones < pad || shape[ones - pad] == 1)) ++ones;
    prefix = std::min(prefix, std::max(equal, ones));
  }
  return prefix;
}

// Whether reducing `in` to `out` sums only dimensions that lead `in` (out is in's trailing
// dimensions, numpy alignment from the right).
bool sumsLeadingDims(const ir::Shape& in, const ir::Shape& out) {
  if (out.size() > in.size()) return false;
  return std::equal(out.begin(), out.end(), in.end() - static_cast<std::ptrdiff_t>(out.size()));
}

// A broadcast operand is held whole in VMEM while the other operands stream; one that
// would take more than half of VMEM (GPT-3's position embeddings, 2048 x 12288 floats,
// added to every example) is instead re-read by each tile, so it does not bound the rows.
std::vector<bool> largeBroadcasts(const ir::Graph& graph, const ir::Op& op, const ir::Shape& out, uint64_t vmem) {
  std::vector<bool> large;
  for (int input : op.inputs) {
    const ir::Tensor& operand = graph.tensor(input);
    large.push_back(operand.shape != out && 2 * operand.bytes() > vmem);
  }
  return large;
}

// Whether one row of `plan`, double-buffered, fits VMEM beside the operands it holds whole
// (the `restreamed` ones aside, which each tile re-reads).
bool oneRowFits(const VectorPlan& plan, uint64_t out_bytes, const std::vector<bool>& restreamed, uint64_t vmem) {
  if (plan.rows == 0) return true;
  const double rows = static_cast<double>(plan.rows);
  double row = static_cast<double>(out_bytes) / rows;
  double held = 0;
  for (size_t i = 0; i < plan.bytes.size(); ++i) {
    const double bytes = static_cast<double>(plan.bytes[i]);
    if (plan.movement[i] != Movement::kWhole || restreamed[i]) {
      row += bytes / rows;
    } else {
      held += bytes;
    }
  }
  return 2 * row + held <= static_cast<double>(vmem);
}

}  // namespace

bool Lowerer::inConvolutionLayout(int tensor) const {
  // Through the elementwise ops after it (batch norm, ReLU) to the convolution that made it.
  for (const ir::Op* op = m_graph.producer(tensor); op != nullptr; op = m_graph.producer(op->inputs[0])) {
    if (op->type == OpType::kConv || op->type == OpType::kConvGradInput) return true;
    if (!ir::isElementwise(op->type) || op->inputs.empty()) return false;
  }
  return false;
}

void Lowerer::lowerVector(const ir::Op& op, uint32_t extra_ops) {
  const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
  const ir::Tensor& first = m_graph.tensor(op.inputs[0]);
  const uint32_t ops_per_element = vectorOpsPerElement(op) + extra_ops;
  VectorPlan plan;
  plan.elements = static_cast<uint64_t>(ir::elementCount(out.shape));
  plan.movement.assign(op.inputs.size(), Movement::kWhole);
  for (int input : op.inputs) plan.bytes.push_back(m_graph.tensor(input).bytes());
  // Rows = out's first `dims` dimensions; inputs that begin with the same ones move with
  // them (of the same rank, where broadcasting aligns shapes from the right).
  const auto leading = [&](size_t dims, bool same_rank) {
    plan.rows = rowsOf(out.shape, dims);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const ir::Shape& shape = m_graph.tensor(op.inputs[i]).shape;
      const bool along =
          (same_rank ? shape.size() == out.shape.size() : shape.size() >= dims) &&
          std::equal(out.shape.begin(), out.shape.begin() + static_cast<std::ptrdiff_t>(dims), shape.begin());
      if (along) plan.movement[i] = Movement::kRows;
    }
  };
  // A window along the minor dimension (the lanes) moves each element of the feature map
  // across lanes twice (a rotate to meet its neighbour, a compaction of the results); where
  // the output's minor dimension is not whole lanes, XLA first copies the input to another
  // layout (one more). Counted per element of the larger map, spread over the work below.
  uint64_t lane_moves = 0;
  const auto crossesLanes = [&](const ir::PoolGeometry& pool) -> uint64_t {
    if (pool.kernel.empty() || (pool.kernel.back() <= 1 && pool.strides.back() <= 1)) return 0;
    // In a convolution's layout the channels are the lanes: the window moves nothing across them.
    if (std::any_of(op.inputs.begin(), op.inputs.end(), [&](int input) { return inConvolutionLayout(input); })) {
      return 0;
    }
    const auto lanes = static_cast<int64_t>(m_hw.vpu().lanes());
    const int64_t minor = out.shape.empty() ? 1 : out.shape.back();
    return minor % lanes == 0 ? 2 : 3;
  };
  const auto strided = [&]() {  // rows are elements; every input moves its share from anywhere
    plan.rows = plan.elements;
    plan.movement.assign(op.inputs.size(), Movement::kStrided);
  };
  // Reductions whose reduced dimensions lead: stream the input, accumulate the output.
  const auto accumulateOver = [&](uint64_t rows, uint64_t elements) {
    lowerAccumulating(op, 0, rows, elements, ops_per_element);
  };

  switch (op.type) {
    case OpType::kTranspose:
    case OpType::kConcat:
    case OpType::kSliceGrad: strided(); break;
    case OpType::kSlice:  // a strided read of just the selected elements
      strided();
      plan.bytes[0] = out.bytes() / dtypeBytes(out.dtype) * dtypeBytes(first.dtype);
      break;
    case OpType::kSoftmax:
    case OpType::kLogSoftmax: leading(static_cast<size_t>(op.axis), true); break;
    case OpType::kPool:
    case OpType::kPoolArgmax:  // each output element reads its window
      leading(2, true);
      plan.elements *= static_cast<uint64_t>(ir::elementCount(op.pool.kernel));
      lane_moves = crossesLanes(op.pool) * static_cast<uint64_t>(ir::elementCount(first.shape));
      break;
    case OpType::kPoolGrad:  // each dy element is spread over its window
      leading(2, true);
      plan.elements = static_cast<uint64_t>(ir::elementCount(first.shape) * ir::elementCount(op.pool.kernel));
      lane_moves = crossesLanes(op.pool) * static_cast<uint64_t>(ir::elementCount(out.shape));
      break;
    case OpType::kSoftmaxCrossEntropyGrad:
    case OpType::kNllLossGrad: leading(1, false); break;
    case OpType::kSoftmaxCrossEntropy:
    case OpType::kNllLoss:
    case OpType::kMseLoss:
      return accumulateOver(first.shape.empty() ? 1 : static_cast<uint64_t>(first.shape[0]),
                            static_cast<uint64_t>(ir::elementCount(first.shape)));
    case OpType::kReduce: {
      size_t reduced = first.shape.size();
      for (int64_t axis : op.perm) reduced = std::min(reduced, static_cast<size_t>(axis));
      if (op.perm.empty()) reduced = 0;
      const auto elements = static_cast<uint64_t>(ir::elementCount(first.shape));
      if (reduced == 0) return accumulateOver(elements, elements);
      leading(reduced, false);
      plan.elements = elements;
      plan.kind = program::REDUCTION;
      break;
    }
    case OpType::kReduceSumTo: {
      const auto elements = static_cast<uint64_t>(ir::elementCount(first.shape));
      size_t kept = 0;
      if (out.shape.size() == first.shape.size()) {
        while (kept < out.shape.size() && out.shape[kept] == first.shape[kept]) ++kept;
      }
      if (kept == 0 && 2 * out.bytes() > vmemBytes() && sumsLeadingDims(first.shape, out.shape)) {
        // An accumulator too large to hold (the gradient of GPT-3's position embeddings,
        // summed over the batch): tiles of the output, each reading its elements of every
        // summed slice.
        strided();
        plan.elements = elements;
        plan.kind = program::REDUCTION;
        break;
      }
      if (kept == 0) return accumulateOver(elements, elements);
      leading(kept, true);
      plan.elements = elements;
      plan.kind = program::REDUCTION;
      break;
    }
    default: {
      std::vector<bool> restreamed = largeBroadcasts(m_graph, op, out.shape, vmemBytes());
      leading(broadcastPrefix(m_graph, op, out.shape, restreamed), true);
      // While the rows the held operands allow are too long for VMEM (GPT-3's causal mask,
      // [2048, 2048], beside bf16 scores whose row is a whole [2048, 2048] head), the largest
      // broadcast operand still held is re-read by each tile instead, and the rows shorten.
      std::vector<size_t> by_size(op.inputs.size());
      for (size_t i = 0; i < by_size.size(); ++i) by_size[i] = i;
      std::stable_sort(by_size.begin(), by_size.end(),
                       [&](size_t a, size_t b) { return plan.bytes[a] > plan.bytes[b]; });
      for (size_t i : by_size) {
        if (oneRowFits(plan, out.bytes(), restreamed, vmemBytes())) break;
        if (restreamed[i] || m_graph.tensor(op.inputs[i]).shape == out.shape) continue;
        restreamed[i] = true;
        plan.movement.assign(op.inputs.size(), Movement::kWhole);
        leading(broadcastPrefix(m_graph, op, out.shape, restreamed), true);
      }
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (!restreamed[i] || plan.movement[i] != Movement::kWhole) continue;
        // Each output element reads its operand element: the loads total out's element count.
        plan.movement[i] = Movement::kStrided;
        plan.bytes[i] =
            static_cast<uint64_t>(ir::elementCount(out.shape)) * dtypeBytes(m_graph.tensor(op.inputs[i]).dtype);
      }
      break;
    }
  }

  // Converting what streams in and the output where the vector unit lacks the dtype's ALU,
  // and the moves across lanes, spread over the elements of the work (rounded up).
  uint64_t converted = static_cast<uint64_t>(ir::elementCount(out.shape)) * packOps(out.dtype) +
                       lane_moves * static_cast<uint64_t>(m_hw.vpu().cross_lane_ops());
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (plan.movement[i] == Movement::kWhole) continue;
    const ir::Tensor& input = m_graph.tensor(op.inputs[i]);
    converted += plan.bytes[i] / dtypeBytes(input.dtype) * unpackOps(input.dtype);
  }
  const auto converts = static_cast<uint32_t>(plan.elements ? (converted + plan.elements - 1) / plan.elements : 0);
  const uint32_t work_per_element = ops_per_element + converts;
  // Bytes per row of what streams, and what stays.
  uint64_t resident = 0;
  double row_bytes = plan.rows ? static_cast<double>(out.bytes()) / static_cast<double>(plan.rows) : 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (plan.movement[i] == Movement::kWhole) {
      resident += plan.bytes[i];
    } else if (plan.rows) {
      row_bytes += static_cast<double>(plan.bytes[i]) / static_cast<double>(plan.rows);
    }
  }
  const uint64_t cores = static_cast<uint64_t>(m_hw.chip().tensor_cores());
  const uint64_t vmem = vmemBytes();
  const std::vector<Span> shares = splitEvenly({0, plan.rows}, cores);
  const auto row_size = static_cast<uint64_t>(std::ceil(row_bytes));
  std::vector<Access> stores;
  uint64_t tiles = 0, tile_rows = 0;
  for (uint32_t core = 0; core < shares.size(); ++core) {
    const Span share = shares[core];
    tile_rows = rowsPerTile(share.size(), row_size, resident, vmem, "op '" + op.name + "'", streamTileBytes());
    std::vector<uint32_t> resident_loads;
    std::vector<uint32_t> resident_buffers(op.inputs.size(), UINT32_MAX);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (plan.movement[i] != Movement::kWhole) continue;
      const ir::Tensor& tensor = m_graph.tensor(op.inputs[i]);
      resident_buffers[i] = addVmem(op, core, tensor.name, tensor.dtype, plan.bytes[i]);
      resident_loads.push_back(
          loadTensor(op, core, tensor.name, op.inputs[i], whole(op.inputs[i]), plan.bytes[i], resident_buffers[i], {}));
    }
    std::vector<uint32_t> slots[2];
    uint32_t out_slots[2];
    for (int s = 0; s < 2; ++s) {
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        const ir::Tensor& tensor = m_graph.tensor(op.inputs[i]);
        slots[s].push_back(plan.movement[i] == Movement::kWhole
                               ? resident_buffers[i]
                               : addVmem(op, core, tensor.name + numbered(".s", s), tensor.dtype, 0));
      }
      out_slots[s] = addVmem(op, core, numbered("out.s", s), out.dtype, 0);
    }
    std::vector<uint32_t> computes, drains;
    const std::vector<Span> core_tiles = tilesOf(share, tile_rows);
    for (size_t t = 0; t < core_tiles.size(); ++t) {
      const Span rows = core_tiles[t];
      const int slot = static_cast<int>(t % 2);
      const std::string part = core_tiles.size() > 1 ? numbered("t", t) : "";
      std::vector<uint32_t> deps = resident_loads;
      uint64_t touched = resident;
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (plan.movement[i] == Movement::kWhole) continue;
        const uint64_t total = m_graph.tensor(op.inputs[i]).bytes();
        // A re-read broadcast operand smaller than a tile's share is read whole.
        const uint64_t bytes = std::min(total, fractionOf(plan.bytes[i], rows.size(), plan.rows));
        program::Buffer* buffer = m_chip.mutable_buffers(static_cast<int>(slots[slot][i]));
        buffer->set_bytes(std::max(buffer->bytes(), bytes));
        const bool along = plan.movement[i] == Movement::kRows;
        const ByteRange range = along ? rowRange(total, plan.rows, 1, rows) : whole(op.inputs[i]);
        const HbmLayout layout =
            along ? contiguousAt(range.begin, bytes, total) : shareOf(total, bytes, rows, plan.rows);
        const std::string name = m_graph.tensor(op.inputs[i]).name + (part.empty() ? "" : "." + part);
        deps.push_back(loadTensor(op, core, name, op.inputs[i], range, layout, slots[slot][i],
                                  t >= 2 ? std::vector<uint32_t>{computes[t - 2]} : std::vector<uint32_t>{}));
        touched += bytes;
      }
      if (t >= 2) deps.push_back(drains[t - 2]);
      const uint64_t out_bytes = fractionOf(out.bytes(), rows.size(), plan.rows);
      program::Buffer* out_buffer = m_chip.mutable_buffers(static_cast<int>(out_slots[slot]));
      out_buffer->set_bytes(std::max(out_buffer->bytes(), out_bytes));
      const uint32_t vpu = vectorInstruction(op, part.empty() ? "vpu" : part + ".vpu", core, plan.kind,
                                             fractionOf(plan.elements, rows.size(), plan.rows), work_per_element,
                                             out.dtype, slots[slot], out_slots[slot], touched + out_bytes, deps);
      const ByteRange range = rowRange(out.bytes(), plan.rows, 1, rows);
      const uint32_t stored = storeOutput(op, core, part, range, out_bytes, out_slots[slot], {vpu});
      stores.push_back({range, stored});
      computes.push_back(vpu);
      drains.push_back(stored);
      ++tiles;
    }
  }
  recordLowering(op, numbered("rows ", tile_rows) + numbered(" of ", plan.rows) + " per tile", tiles,
                 resident + (tiles > shares.size() ? 2 : 1) * tile_rows * row_size);
  finish(op, std::move(stores));
}

void Lowerer::lowerAccumulating(const ir::Op& op, int main_input, uint64_t rows, uint64_t elements,
                                uint32_t ops_per_element) {
  const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
  const ir::Tensor& main = m_graph.tensor(op.inputs[static_cast<size_t>(main_input)]);
  const int64_t main_lead = main.shape.empty() ? 1 : main.shape[0];
  ops_per_element += unpackOps(main.dtype);  // each streamed element converted as it is read
  // Inputs of the main input's shape stream with it, as do those laid out along its leading
  // dimension when the rows are it.
  std::vector<bool> streams;
  uint64_t resident = out.bytes(), row_total = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const ir::Tensor& tensor = m_graph.tensor(op.inputs[i]);
    // (Input 1 of a loss holds the labels, one row per example.)
    const bool along =
        static_cast<int>(i) == main_input || tensor.shape == main.shape ||
        (i == 1 && !tensor.shape.empty() && tensor.shape[0] == main_lead && rows == static_cast<uint64_t>(main_lead));
    streams.push_back(along);
    if (along) {
      row_total += tensor.bytes();
    } else {
      resident += tensor.bytes();
    }
  }
  const uint64_t vmem = vmemBytes();
  const uint64_t row_size = rows ? (row_total + rows - 1) / rows : 0;
  // Small enough for one tile: one core does it all, with no partial results to combine.
  const uint64_t cores = row_total + resident <= vmem ? 1 : static_cast<uint64_t>(m_hw.chip().tensor_cores());
  const std::vector<Span> shares = splitEvenly({0, rows}, cores);
  const bool partials = shares.size() > 1;
  const uint32_t scratch = partials ? scratchBuffer(out.bytes() * shares.size()) : UINT32_MAX;
  std::vector<Access> stores;
  std::vector<uint32_t> partial_stores;
  uint64_t tiles = 0, tile_rows = 0;
  for (uint32_t core = 0; core < shares.size(); ++core) {
    tile_rows = rowsPerTile(shares[core].size(), row_size, resident, vmem, "op '" + op.name + "'");
    std::vector<uint32_t> resident_loads;
    std::vector<uint32_t> buffers[2];
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const ir::Tensor& tensor = m_graph.tensor(op.inputs[i]);
      if (streams[i]) {
        for (int s = 0; s < 2; ++s)
          buffers[s].push_back(addVmem(op, core, tensor.name + numbered(".s", s), tensor.dtype, 0));
        continue;
      }
      const uint32_t buffer = addVmem(op, core, tensor.name, tensor.dtype, tensor.bytes());
      resident_loads.push_back(
          loadTensor(op, core, tensor.name, op.inputs[i], whole(op.inputs[i]), tensor.bytes(), buffer, {}));
      for (int s = 0; s < 2; ++s) buffers[s].push_back(buffer);
    }
    const uint32_t accumulator = addVmem(op, core, "acc", out.dtype, out.bytes());
    std::vector<uint32_t> computes;
    const std::vector<Span> core_tiles = tilesOf(shares[core], tile_rows);
    for (size_t t = 0; t < core_tiles.size(); ++t) {
      const Span span = core_tiles[t];
      const int slot = static_cast<int>(t % 2);
      const std::string part = core_tiles.size() > 1 ? numbered("t", t) : "";
      std::vector<uint32_t> deps = resident_loads;
      uint64_t touched = resident;
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (!streams[i]) continue;
        const ir::Tensor& tensor = m_graph.tensor(op.inputs[i]);
        const uint64_t bytes = fractionOf(tensor.bytes(), span.size(), rows);
        program::Buffer* buffer = m_chip.mutable_buffers(static_cast<int>(buffers[slot][i]));
        buffer->set_bytes(std::max(buffer->bytes(), bytes));
        deps.push_back(loadTensor(op, core, tensor.name + (part.empty() ? "" : "." + part), op.inputs[i],
                                  rowRange(tensor.bytes(), rows, 1, span), bytes, buffers[slot][i],
                                  t >= 2 ? std::vector<uint32_t>{computes[t - 2]} : std::vector<uint32_t>{}));
        touched += bytes;
      }
      computes.push_back(vectorInstruction(op, part.empty() ? "vpu" : part + ".vpu", core, program::REDUCTION,
                                           fractionOf(elements, span.size(), rows), ops_per_element, out.dtype,
                                           buffers[slot], accumulator, touched, deps));
      ++tiles;
    }
    if (partials) {
      const ByteRange range{core * out.bytes(), (core + 1) * out.bytes()};
      partial_stores.push_back(store(op, core, "partial", scratch, range,
                                     HbmLayout::contiguous(range.begin, out.bytes()), accumulator, {computes.back()}));
    } else {
      const ByteRange range = whole(op.outputs[0]);
      stores.push_back({range, storeOutput(op, core, "", range, out.bytes(), accumulator, {computes.back()})});
    }
  }
  if (partials) {
    // Core 0 adds the partial results up.
    const uint64_t bytes = out.bytes() * shares.size();
    const uint32_t gathered = addVmem(op, 0, "partials", out.dtype, bytes);
    const uint32_t loaded =
        load(op, 0, "partials", scratch, {0, bytes}, HbmLayout::contiguous(0, bytes), gathered, partial_stores);
    m_hazards[scratch].writers.clear();
    for (size_t core = 0; core < shares.size(); ++core) {
      m_hazards[scratch].writers.push_back({{core * out.bytes(), (core + 1) * out.bytes()}, partial_stores[core]});
    }
    const uint32_t result = addVmem(op, 0, "out", out.dtype, out.bytes());
    const uint64_t out_elements = static_cast<uint64_t>(ir::elementCount(out.shape));
    const uint32_t added =
        vectorInstruction(op, "combine.vpu", 0, program::ELEMENTWISE, out_elements * (shares.size() - 1), 1, out.dtype,
                          {gathered}, result, bytes + out.bytes(), {loaded});
    const ByteRange range = whole(op.outputs[0]);
    stores.push_back({range, storeOutput(op, 0, "", range, out.bytes(), result, {added})});
  }
  recordLowering(op, numbered("accumulate: rows ", tile_rows) + numbered(" of ", rows) + " per tile", tiles,
                 resident + (tiles > shares.size() ? 2 : 1) * tile_rows * row_size);
  finish(op, std::move(stores));
}

// A gather is data movement: each tile DMAs its share of the indices, then the rows
// they address from the table in HBM into VMEM, and stores them. No vector work.
void Lowerer::lowerGather(const ir::Op& op) {
  const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
  const ir::Tensor& indices = m_graph.tensor(op.inputs[1]);
  const uint64_t rows = static_cast<uint64_t>(ir::elementCount(indices.shape));
  const uint64_t row_size = rows ? (out.bytes() * 2 + indices.bytes() + rows - 1) / rows : 0;  // rows land, then leave
  std::vector<Access> stores;
  uint64_t tiles = 0, tile_rows = 0;
  const std::vector<Span> shares = splitEvenly({0, rows}, static_cast<uint64_t>(m_hw.chip().tensor_cores()));
  for (uint32_t core = 0; core < shares.size(); ++core) {
    tile_rows = rowsPerTile(shares[core].size(), row_size, 0, vmemBytes(), "op '" + op.name + "'");
    uint32_t index_slots[2], row_slots[2];
    for (int s = 0; s < 2; ++s) {
      index_slots[s] = addVmem(op, core, indices.name + numbered(".s", s), indices.dtype, 0);
      row_slots[s] = addVmem(op, core, numbered("rows.s", s), out.dtype, 0);
    }
    std::vector<uint32_t> drains;
    const std::vector<Span> core_tiles = tilesOf(shares[core], tile_rows);
    for (size_t t = 0; t < core_tiles.size(); ++t) {
      const Span span = core_tiles[t];
      const int slot = static_cast<int>(t % 2);
      const std::string part = core_tiles.size() > 1 ? numbered("t", t) + "." : "";
      const std::vector<uint32_t> slot_free = t >= 2 ? std::vector<uint32_t>{drains[t - 2]} : std::vector<uint32_t>{};
      const uint64_t index_bytes = fractionOf(indices.bytes(), span.size(), rows);
      const uint64_t row_bytes = fractionOf(out.bytes(), span.size(), rows);
      m_chip.mutable_buffers(static_cast<int>(index_slots[slot]))->set_bytes(index_bytes);
      m_chip.mutable_buffers(static_cast<int>(row_slots[slot]))->set_bytes(row_bytes);
      const uint32_t got_indices =
          loadTensor(op, core, part + indices.name, op.inputs[1], rowRange(indices.bytes(), rows, 1, span), index_bytes,
                     index_slots[slot], slot_free);
      // The table rows the indices address are data: the descriptor spreads them over the table.
      const uint32_t got_rows = loadTensor(
          op, core, part + "rows", op.inputs[0], whole(op.inputs[0]),
          spreadRows(m_graph.tensor(op.inputs[0]).bytes(), span.size(), out.bytes() / std::max<uint64_t>(rows, 1)),
          row_slots[slot], {got_indices});
      const ByteRange range = rowRange(out.bytes(), rows, 1, span);
      const uint32_t stored = storeOutput(op, core, part.empty() ? "" : part.substr(0, part.size() - 1), range,
                                          row_bytes, row_slots[slot], {got_rows});
      stores.push_back({range, stored});
      drains.push_back(stored);
      ++tiles;
    }
  }
  recordLowering(op, numbered("indices ", tile_rows) + numbered(" of ", rows) + " per tile", tiles,
                 2 * tile_rows * row_size);
  finish(op, std::move(stores));
}

// The gradient of a gather, a scatter-add: the table's gradient is zeroed (stores from
// one zero-filled VMEM tile), then each tile of dy reads the rows its indices address,
// adds itself in on the vector unit, and writes them back. A core's tiles run one after
// another, since two tiles may address the same rows; concurrent adds from different
// cores are taken to be atomic in HBM.
void Lowerer::lowerGatherGrad(const ir::Op& op) {
  const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
  const ir::Tensor& dy = m_graph.tensor(op.inputs[0]);
  const ir::Tensor& indices = m_graph.tensor(op.inputs[1]);
  const uint64_t cores = static_cast<uint64_t>(m_hw.chip().tensor_cores());
  const uint64_t vmem = vmemBytes();
  const uint64_t element = dtypeBytes(out.dtype);
  const uint64_t out_elements = static_cast<uint64_t>(ir::elementCount(out.shape));
  std::vector<Access> stores;
  std::vector<uint32_t> zeroed;
  uint64_t tiles = 0;
  for (uint32_t core = 0; core < std::min<uint64_t>(cores, std::max<uint64_t>(out_elements, 1)); ++core) {
    const Span share = splitEvenly({0, out_elements}, cores)[core];
    const uint64_t tile = std::min(share.size(), std::max<uint64_t>(vmem / 2 / element, 1));
    const uint32_t zeros = addVmem(op, core, "zeros", out.dtype, tile * element);
    const uint32_t fill = vectorInstruction(op, "zero.vpu", core, program::ELEMENTWISE, tile, 1, out.dtype, {}, zeros,
                                            tile * element, {});
    for (const Span span : tilesOf(share, tile)) {
      const ByteRange range{span.begin * element, span.end * element};
      const uint32_t stored =
          storeOutput(op, core, numbered("zero.e", span.begin), range, span.size() * element, zeros, {fill});
      stores.push_back({range, stored});
      zeroed.push_back(stored);
      ++tiles;
    }
  }
  const uint64_t rows = static_cast<uint64_t>(ir::elementCount(dy.shape));  // dy elements, with their indices
  const uint64_t row_size = rows ? (3 * dy.bytes() + indices.bytes() + rows - 1) / rows : 0;
  uint64_t tile_rows = 0;
  const std::vector<Span> shares = splitEvenly({0, rows}, cores);
  for (uint32_t core = 0; core < shares.size(); ++core) {
    tile_rows = rowsPerTile(shares[core].size(), row_size, 0, vmem, "op '" + op.name + "'");
    uint32_t previous = UINT32_MAX;
    for (const Span span : tilesOf(shares[core], tile_rows)) {
      const std::string part = numbered("e", span.begin);
      const uint64_t dy_bytes = fractionOf(dy.bytes(), span.size(), rows);
      const uint64_t index_bytes = fractionOf(indices.bytes(), span.size(), indices.shape.empty() ? 1 : rows);
      const uint32_t index_buffer = addVmem(op, core, "indices." + part, indices.dtype, index_bytes);
      const uint32_t dy_buffer = addVmem(op, core, "dy." + part, dy.dtype, dy_bytes);
      const uint32_t rows_buffer = addVmem(op, core, "rows." + part, out.dtype, dy_bytes);
      const uint32_t got_indices = loadTensor(op, core, "indices." + part, op.inputs[1], whole(op.inputs[1]),
                                              shareOf(indices.bytes(), index_bytes, span, rows), index_buffer, {});
      const uint32_t got_dy = loadTensor(op, core, "dy." + part, op.inputs[0], rowRange(dy.bytes(), rows, 1, span),
                                         dy_bytes, dy_buffer, {});
      std::vector<uint32_t> before = zeroed;
      before.push_back(got_indices);
      before.push_back(previous);
      // The table rows the indices address are data: the descriptors spread dy's rows over the
      // table (element by element where a tile ends inside a row).
      const uint64_t table_row = out.shape.empty() ? element : out.bytes() / std::max<int64_t>(out.shape[0], 1);
      const uint64_t row = table_row > 0 && dy_bytes % table_row == 0 ? table_row : element;
      const HbmLayout table_rows = spreadRows(out.bytes(), dy_bytes / row, row);
      const uint32_t got_rows =
          loadTensor(op, core, "rows." + part, op.outputs[0], whole(op.outputs[0]), table_rows, rows_buffer, before);
      m_hazards[hbmOf(op.outputs[0])].readers.pop_back();  // ordered by `previous` and `zeroed`, not by hazards
      const uint32_t added =
          vectorInstruction(op, part + ".vpu", core, program::ELEMENTWISE, span.size(), vectorOpsPerElement(op),
                            out.dtype, {dy_buffer, rows_buffer}, rows_buffer, 2 * dy_bytes, {got_dy, got_rows});
      previous = storeOutput(op, core, "scatter." + part, whole(op.outputs[0]), table_rows, rows_buffer, {added});
      stores.push_back({whole(op.outputs[0]), previous});
      ++tiles;
    }
  }
  recordLowering(op, numbered("zero, then scatter-add rows ", tile_rows) + numbered(" of ", rows) + " per tile", tiles,
                 std::min(vmem, tile_rows * row_size));
  finish(op, std::move(stores));
}

}  // namespace tpusim::lowering
