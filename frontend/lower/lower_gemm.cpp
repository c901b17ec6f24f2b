// MXU work: matmuls and convolutions as GEMMs, blocked to fit VMEM (tiling.hpp).
#include <algorithm>
#include <cmath>
#include <map>

#include "frontend/lower/lowerer.hpp"
#include "frontend/lower/tiling.hpp"
#include "frontend/lower/vector_costs.hpp"
#include "sim/common/error.hpp"
#include "sim/mxu/array_config.hpp"

namespace tpusim::lowering {

namespace {

using ir::OpType;

uint64_t product(uint64_t a, uint64_t b, uint64_t c) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b * c;
  return p > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(p);
}

// The MXU multiplies bf16 (and f32 in passes) and accumulates in f32, or int8 into int32; it has no f64
// datapath, so an f64 matmul or convolution cannot be lowered to it.
void checkMxuDType(const ir::Op& op, DType dtype) {
  if (dtype != DType::kF64) return;
  std::string message = "op '";
  message.append(op.name).append("': f64 ").append(op.type == OpType::kMatMul ? "matmul" : "convolution");
  message.append(" is not supported on the MXU");
  throw Error(ErrorKind::kUnsupported, message);
}

std::string tilingText(const GemmTiling& tiling) {
  std::string text = gemmBlockingName(tiling.blocking);
  text.append(" m_tile=").append(std::to_string(tiling.m_tile));
  text.append(" n_block=").append(std::to_string(tiling.n_block));
  text.append(" k_tile=").append(std::to_string(tiling.k_tile));
  return text;
}

}  // namespace

GemmCostModel Lowerer::costModel(DType input_dtype) const {
  GemmCostModel model;
  model.array = arrayConfigOf(m_hw);
  model.mxus = static_cast<uint64_t>(m_hw.mxu().per_core());
  model.passes = input_dtype == DType::kF32 ? m_f32_passes : 1;
  model.feed_interval = input_dtype == DType::kF16 ? static_cast<uint64_t>(m_hw.mxu().f16_feed_interval_cycles()) : 1;
  model.vector_width = static_cast<uint64_t>(m_hw.vpu().lanes() * m_hw.vpu().sublanes());
  model.int8 = input_dtype == DType::kInt8;
  const double cores = static_cast<double>(m_hw.chip().tensor_cores());
  model.hbm_bytes_per_cycle = m_hw.hbm().bandwidth_gbps() * 1e9 / (m_hw.chip().clock_mhz() * 1e6) / cores;
  return model;
}

// One operand of a GEMM job. `total` is its bytes over every item and the whole of
// the dimensions it spans; a tile moves the fraction of it that the tile covers.
struct Lowerer::GemmOperand {
  enum class Axis { kItems, kM, kK, kN, kWhole };
  int tensor = -1;
  uint64_t total = 0;
  bool batched = true;       // one copy per item (else one copy serves all items)
  Axis axis = Axis::kWhole;  // the dimension its bytes are laid out along, for dependencies
  uint64_t extent = 1;       // of that dimension
  uint64_t granule = 1;      // rows per contiguous block along it
  // Stored as row-major matrices, one per item (or one for all when not batched), in the
  // orientation `transposed` says: tiles then have exact, possibly strided, addresses.
  // (Convolution operands are images, whose patches the GEMM never builds.)
  bool matrix = false;
  bool transposed = false;
  // The output of an elementwise op fused into the loads (operandPrologues), whose streamed
  // operand `tensor` is: each tile is computed on the vector unit as it lands; -1 if none.
  int prologue = -1;
};

// One core's share of the op: `items` independent out[m, n] = lhs[m, k] x rhs[k, n].
struct Lowerer::GemmJob {
  const ir::Op* op = nullptr;
  uint64_t items_total = 1;
  Span items;
  uint64_t m_total = 0;  // rows over all cores
  Span m;                // this core's rows
  uint64_t k = 0, n = 0;
  // A share of K (the cores split it): this core's K runs from k_offset, of k_total in all;
  // its out tiles are partial sums, stored to scratch HBM at partial_offset (partial_scratch).
  uint64_t k_offset = 0, k_total = 0;
  uint32_t partial_scratch = UINT32_MAX;
  uint64_t partial_offset = 0;
  GemmOperand lhs, rhs, out;
  DType input_dtype = DType::kF32;
  DType output_dtype = DType::kF32;
  bool transpose_lhs = false, transpose_rhs = false;
  const std::vector<const ir::Op*>* epilogue = nullptr;  // elementwise ops fused behind it
  std::vector<std::vector<Access>>* epilogue_stores = nullptr;
};

void Lowerer::emitGemm(const GemmJob& job, uint32_t core, std::vector<Access>& stores, uint64_t& tiles,
                       uint64_t& vmem_held, std::string& tiling_text) {
  using Axis = GemmOperand::Axis;
  const ir::Op& op = *job.op;
  GemmCostModel model = costModel(job.input_dtype);
  model.split_depth = op.type == OpType::kConvGradWeight;
  // The first core's call describes the op's tiling, ending with how tiles met the MXUs.
  const bool describe = tiling_text.empty();
  bool split_by[3] = {false, false, false};  // by MxuSplitAxis
  bool split_transposed = false;
  const auto describeSplit = [&] {
    if (!describe) return;
    std::string axes;
    for (const auto& [axis, name] : {std::pair{MxuSplitAxis::kRows, "rows"}, std::pair{MxuSplitAxis::kCols, "cols"},
                                     std::pair{MxuSplitAxis::kDepth, "depth"}}) {
      if (split_by[static_cast<int>(axis)]) axes.append(axes.empty() ? "" : ",").append(name);
    }
    tiling_text += " mxu_split=" + axes;
    if (split_transposed) tiling_text += " out_transposed";
    if (model.passes > 1) tiling_text += numbered(" passes=", model.passes);
    if (model.feed_interval > 1) tiling_text += numbered(" feed_interval=", model.feed_interval);
  };
  const uint64_t align = static_cast<uint64_t>(m_hw.mxu().cols());
  const bool fusing = job.epilogue && !job.epilogue->empty();
  const FusedFootprint footprint = fusing ? fusedFootprint(*job.epilogue, job.out.tensor) : FusedFootprint{};
  if (footprint.resident >= vmemBytes()) {
    throw Error(ErrorKind::kResource, "the ops fused behind '" + op.name + "' hold " + mib(footprint.resident) +
                                          " of VMEM, more than there is");
  }
  const uint64_t vmem = vmemBytes() - footprint.resident;
  std::unique_ptr<Fused> fused;
  if (fusing) {
    fused = std::make_unique<Fused>();
    fused->ops = *job.epilogue;
    fused->core = core;
    fused->shape = m_graph.tensor(job.out.tensor).shape;
    fused->stores.resize(job.epilogue->size());
  }
  const bool store_out = !m_on_chip[static_cast<size_t>(job.out.tensor)];
  const auto grow = [&](uint32_t buffer, uint64_t bytes) {
    program::Buffer* b = m_chip.mutable_buffers(static_cast<int>(buffer));
    b->set_bytes(std::max(b->bytes(), bytes));
  };
  // The MXU multiplies bf16 (and int8, and f32 as bf16 passes) but not f16: f16 vectors are
  // converted on their way into the array, which slows its feed (model.feed_interval,
  // mxu.f16_feed_interval_cycles); an output of a type the vector unit has no ALU for is
  // converted from the f32 sums before it is stored (vpu.f16_pack_ops, vpu.bf16_convert_ops).
  // A tile of a cast's input (the cast fused into this op) is converted to the op's type first.
  const uint32_t out_convert = packOps(job.output_dtype);
  // A fused operand prologue reads its small operands from VMEM, each loaded once per core.
  std::map<int, std::pair<uint32_t, uint32_t>> held;  // tensor -> VMEM buffer, its load
  const auto converted = [&](uint32_t load, uint32_t buffer, uint64_t bytes, const std::string& part,
                             const GemmOperand& operand) {
    const DType stored = m_graph.tensor(operand.tensor).dtype;
    uint32_t ops = stored != job.input_dtype ? packOps(job.input_dtype) : 0;
    std::vector<uint32_t> reads = {buffer}, deps = {load};
    if (operand.prologue >= 0) {
      const ir::Op& fused_op = m_graph.ops()[m_op_writing[static_cast<size_t>(operand.prologue)]];
      ops += vectorOpsPerElement(fused_op);
      for (int input : fused_op.inputs) {
        if (input == operand.tensor) continue;
        auto kept = held.find(input);
        if (kept == held.end()) {
          const ir::Tensor& small = m_graph.tensor(input);
          const uint32_t vmem = addVmem(op, core, small.name, small.dtype, small.bytes());
          kept = held.emplace(input, std::make_pair(vmem, loadTensor(op, core, small.name, input, whole(input),
                                                                     small.bytes(), vmem, {})))
                     .first;
        }
        reads.push_back(kept->second.first);
        deps.push_back(kept->second.second);
      }
    }
    if (ops == 0) return load;
    return vectorInstruction(op, part + (operand.prologue >= 0 ? ".fused" : ".convert"), core, program::ELEMENTWISE,
                             bytes / dtypeBytes(stored), ops, job.input_dtype, reads, buffer, bytes, deps);
  };

  const uint64_t k_all = job.k_total > 0 ? job.k_total : job.k;  // K over all cores
  // The bytes and the byte range of `operand` for a tile of items x rows x cols (its own two dims).
  const auto extentOf = [&](const GemmOperand& operand, int dim) {  // dim 0: rows, 1: cols of the operand
    if (&operand == &job.lhs) return dim == 0 ? job.m_total : k_all;
    if (&operand == &job.rhs) return dim == 0 ? k_all : job.n;
    return dim == 0 ? job.m_total : job.n;
  };
  const auto bytesOf = [&](const GemmOperand& operand, uint64_t items, uint64_t rows, uint64_t cols) {
    const uint64_t part = product(operand.batched ? items : 1, rows, cols);
    const uint64_t whole = product(operand.batched ? job.items_total : 1, extentOf(operand, 0), extentOf(operand, 1));
    return fractionOf(operand.total, part, whole);
  };
  const auto rangeOf = [&](const GemmOperand& operand, Span items, Span rows, Span cols) {
    Span along{0, operand.extent};
    switch (operand.axis) {
      case Axis::kItems: along = items; break;
      case Axis::kM:
      case Axis::kK: along = (&operand == &job.rhs) ? rows : (operand.axis == Axis::kK ? cols : rows); break;
      case Axis::kN: along = cols; break;
      case Axis::kWhole: break;
    }
    return rowRange(m_graph.tensor(operand.tensor).bytes(), operand.extent, operand.granule, along);
  };
  // Where a tile of items x rows x cols (the operand's own dims) lies in the operand's buffer:
  // a column block of a row-major matrix is one strided descriptor. Without a matrix layout,
  // the tile's bytes from where its byte range begins.
  const auto layoutOf = [&](const GemmOperand& operand, Span items, Span rows, Span cols) {
    const uint64_t bytes = bytesOf(operand, items.size(), rows.size(), cols.size());
    const uint64_t total = m_graph.tensor(operand.tensor).bytes();
    const uint64_t matrices = operand.batched ? job.items_total : 1;
    const uint64_t whole_rows = extentOf(operand, operand.transposed ? 1 : 0);
    const uint64_t whole_cols = extentOf(operand, operand.transposed ? 0 : 1);
    const uint64_t cells = product(matrices, whole_rows, whole_cols);
    if (operand.matrix && cells > 0 && total % cells == 0) {
      const uint64_t element = total / cells;
      const Span stored_rows = operand.transposed ? cols : rows, stored_cols = operand.transposed ? rows : cols;
      const Span matrix = operand.batched ? items : Span{0, 1};
      const uint64_t matrix_bytes = whole_rows * whole_cols * element;
      const uint64_t first =
          matrix.begin * matrix_bytes + (stored_rows.begin * whole_cols + stored_cols.begin) * element;
      if (stored_cols.size() == whole_cols && (stored_rows.size() == whole_rows || matrix.size() == 1)) {
        return HbmLayout::contiguous(first, matrix.size() * stored_rows.size() * whole_cols * element);
      }
      if (matrix.size() == 1 && stored_rows.size() > 1) {
        return HbmLayout{first, stored_rows.size(), stored_cols.size() * element, whole_cols * element};
      }
      if (matrix.size() == 1) return HbmLayout::contiguous(first, stored_cols.size() * element);
    }
    return contiguousAt(rangeOf(operand, items, rows, cols).begin, bytes, total);
  };
  const auto element = [&](const GemmOperand& operand, uint64_t rows, uint64_t cols) {
    const uint64_t items = operand.batched ? job.items_total : 1;
    return static_cast<double>(operand.total) / static_cast<double>(product(items, rows, cols));
  };

  // One tile on the MXUs: its columns, rows or depth split over the core's MXUs
  // (chooseMxuSplit), all reading lhs and rhs. A tile whose depth was split holds one
  // share of its sums per MXU until finishTile adds them (depth_shares).
  uint64_t depth_shares = 1;
  const auto compute = [&](const std::string& part, uint64_t m, uint64_t k, uint64_t n, uint32_t lhs, uint32_t rhs,
                           uint32_t out, const std::vector<uint32_t>& deps) {
    std::vector<uint32_t> ids;
    const MxuSplit split = chooseMxuSplit(m, k, n, model);
    split_by[static_cast<int>(split.axis)] = true;
    if (split.transposed) split_transposed = true;
    const bool by_rows = split.axis == MxuSplitAxis::kRows, by_depth = split.axis == MxuSplitAxis::kDepth;
    if (by_depth) depth_shares = std::max(depth_shares, split.pieces);
    const std::vector<Span> pieces = splitEvenly({0, by_rows ? m : by_depth ? k : n}, split.pieces);
    for (uint32_t mxu = 0; mxu < pieces.size(); ++mxu) {
      const uint64_t rows = by_rows ? pieces[mxu].size() : m;
      const uint64_t cols = split.axis == MxuSplitAxis::kCols ? pieces[mxu].size() : n;
      const uint64_t depth = by_depth ? pieces[mxu].size() : k;
      program::Instruction& ins = newInstruction(op, part + numbered("mxu", mxu), program::MXU, core, mxu);
      program::MatMul* mm = ins.mutable_matmul();
      // Transposed: out^T [cols, rows] = rhs^T [cols, k] x lhs^T [k, rows].
      mm->set_m(split.transposed ? cols : rows);
      mm->set_k(depth);
      mm->set_n(split.transposed ? rows : cols);
      mm->set_transpose_out(split.transposed);
      mm->set_passes(static_cast<uint32_t>(model.passes));
      mm->set_feed_interval(static_cast<uint32_t>(model.feed_interval));
      mm->set_input_dtype(toProgramDType(job.input_dtype));
      mm->set_accumulate_dtype(job.input_dtype == DType::kInt8 ? program::INT32 : program::F32);
      mm->set_transpose_lhs(split.transposed ? !job.transpose_rhs : job.transpose_lhs);
      mm->set_transpose_rhs(split.transposed ? !job.transpose_lhs : job.transpose_rhs);
      ins.set_flops(2 * rows * depth * cols);
      ins.set_bytes((rows * depth + depth * cols) * dtypeBytes(job.input_dtype) +
                    rows * cols * dtypeBytes(job.output_dtype));
      ins.add_reads(lhs);
      ins.add_reads(rhs);
      ins.add_writes(out);
      std::vector<uint32_t> sorted = deps;
      std::sort(sorted.begin(), sorted.end());
      sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
      for (uint32_t dep : sorted) {
        if (dep != UINT32_MAX) ins.add_deps(dep);
      }
      ids.push_back(ins.id());
    }
    return ids;
  };
  const auto last = [](const std::vector<std::vector<uint32_t>>& steps, size_t back) {
    return steps.size() >= back ? steps[steps.size() - back] : std::vector<uint32_t>{};
  };

  // An output tile is ready after `computes`: store it (unless only fused ops read it) and
  // run the fused ops on it. Returns what must finish before its VMEM is reused.
  const auto finishTile = [&](const std::string& part, Span items, Span rows, Span cols, uint32_t out_slot,
                              const std::vector<uint32_t>& products) {
    const uint64_t bytes = bytesOf(job.out, items.size(), rows.size(), cols.size());
    grow(out_slot, bytes);
    std::vector<uint32_t> computes = products;
    if (depth_shares > 1) {  // the MXUs' shares of K added in f32 on the vector unit
      const uint64_t sums = items.size() * rows.size() * cols.size() * (depth_shares - 1);
      computes = {vectorInstruction(op, part + ".shares", core, program::ELEMENTWISE, sums, 1, DType::kF32, {out_slot},
                                    out_slot, sums * dtypeBytes(DType::kF32), products)};
      depth_shares = 1;
    }
    std::vector<uint32_t> done;
    if (store_out) {
      std::vector<uint32_t> ready = computes;
      if (out_convert > 0) {
        ready = {vectorInstruction(op, part + ".convert", core, program::ELEMENTWISE,
                                   bytes / dtypeBytes(job.output_dtype), out_convert, job.output_dtype, {out_slot},
                                   out_slot, bytes, computes)};
      }
      const ByteRange range = rangeOf(job.out, items, rows, cols);
      if (job.partial_scratch != UINT32_MAX) {  // a partial sum over this core's share of K
        const ByteRange partial{job.partial_offset + range.begin, job.partial_offset + range.end};
        const uint32_t id = store(op, core, part + ".partial", job.partial_scratch, partial,
                                  HbmLayout::contiguous(partial.begin, partial.end - partial.begin), out_slot, ready);
        stores.push_back({partial, id});
        done.push_back(id);
        return done;
      }
      const uint32_t id = storeOutput(op, core, part, range, layoutOf(job.out, items, rows, cols), out_slot, ready);
      stores.push_back({range, id});
      done.push_back(id);
    }
    if (fused) {
      const auto like = [&](int tensor) {
        GemmOperand same = job.out;
        same.tensor = tensor;
        same.total = m_graph.tensor(tensor).bytes();
        return same;
      };
      const auto range = [&](int tensor) { return rangeOf(like(tensor), items, rows, cols); };
      const auto layout = [&](int tensor) { return layoutOf(like(tensor), items, rows, cols); };
      const std::vector<uint32_t> ids =
          emitFusedTile(*fused, part, bytes, job.out.total, range, layout, job.out.tensor, out_slot, computes);
      done.insert(done.end(), ids.begin(), ids.end());
    }
    return done;
  };
  const auto finishFusedCore = [&]() {
    if (!fused) return;
    storeFusedPartials(*fused);
    for (size_t i = 0; i < fused->stores.size(); ++i) {
      auto& into = (*job.epilogue_stores)[i];
      into.insert(into.end(), fused->stores[i].begin(), fused->stores[i].end());
    }
  };

  // Items small enough to take several at once go through in groups: one load of each
  // operand and one store per group, a product per item on the MXUs.
  const GemmShape item{job.m.size(),
                       job.k,
                       job.n,
                       element(job.lhs, job.m_total, k_all),
                       element(job.rhs, k_all, job.n),
                       element(job.out, job.m_total, job.n) + footprint.bytes_per_element};
  const double item_bytes = static_cast<double>(job.m.size()) * static_cast<double>(job.k) * item.lhs_element +
                            static_cast<double>(job.k * job.n) * item.rhs_element +
                            static_cast<double>(job.m.size() * job.n) * item.out_element;
  const uint64_t count = job.items.size();
  if (count > 1 && 2 * item_bytes <= static_cast<double>(vmem)) {
    // Operands shared by all items stay resident.
    uint64_t resident = 0;
    for (const GemmOperand* operand : {&job.lhs, &job.rhs}) {
      if (!operand->batched) resident += bytesOf(*operand, 1, extentOf(*operand, 0), extentOf(*operand, 1));
    }
    uint64_t per_item = 0;
    for (const GemmOperand* operand : {&job.lhs, &job.rhs, &job.out}) {
      const uint64_t rows = operand == &job.rhs ? job.k : job.m.size();
      const uint64_t cols = operand == &job.lhs ? job.k : job.n;
      if (operand->batched) per_item += bytesOf(*operand, 1, rows, cols);
    }
    per_item +=
        static_cast<uint64_t>(std::ceil(footprint.bytes_per_element * static_cast<double>(job.m.size() * job.n)));
    const uint64_t group = rowsPerTile(count, per_item, resident, vmem, "op '" + op.name + "'");
    const std::vector<Span> groups = tilesOf(job.items, group);
    uint32_t shared[2] = {UINT32_MAX, UINT32_MAX};
    std::vector<uint32_t> shared_loads;
    const GemmOperand* sides[2] = {&job.lhs, &job.rhs};
    for (int side = 0; side < 2; ++side) {
      const GemmOperand& operand = *sides[side];
      if (operand.batched) continue;
      const uint64_t bytes = bytesOf(operand, 1, extentOf(operand, 0), extentOf(operand, 1));
      shared[side] = addVmem(op, core, side == 0 ? "lhs" : "rhs", job.input_dtype, bytes);
      shared_loads.push_back(converted(loadTensor(op, core, side == 0 ? "lhs" : "rhs", operand.tensor,
                                                  whole(operand.tensor), bytes, shared[side], {}),
                                       shared[side], bytes, side == 0 ? "lhs" : "rhs", operand));
    }
    uint32_t slots[3][2];
    for (int s = 0; s < 2; ++s) {
      slots[0][s] = addVmem(op, core, numbered("lhs.s", s), job.input_dtype, 0);
      slots[1][s] = addVmem(op, core, numbered("rhs.s", s), job.input_dtype, 0);
      slots[2][s] = addVmem(op, core, numbered("out.s", s), job.output_dtype, 0);
    }
    std::vector<std::vector<uint32_t>> computes;
    std::vector<std::vector<uint32_t>> drains;
    for (size_t t = 0; t < groups.size(); ++t) {
      const Span items = groups[t];
      const int slot = static_cast<int>(t % 2);
      std::vector<uint32_t> loads = shared_loads;
      uint32_t reads[2] = {shared[0], shared[1]};
      for (int side = 0; side < 2; ++side) {
        const GemmOperand& operand = *sides[side];
        if (!operand.batched) continue;
        const uint64_t rows = side == 0 ? job.m.size() : job.k, cols = side == 0 ? job.k : job.n;
        const uint64_t bytes = bytesOf(operand, items.size(), rows, cols);
        program::Buffer* buffer = m_chip.mutable_buffers(static_cast<int>(slots[side][slot]));
        buffer->set_bytes(std::max(buffer->bytes(), bytes));
        reads[side] = slots[side][slot];
        const std::string part = std::string(side == 0 ? "lhs" : "rhs") + numbered(".g", t);
        loads.push_back(
            converted(loadTensor(op, core, part, operand.tensor, rangeOf(operand, items, {0, rows}, {0, cols}),
                                 layoutOf(operand, items, {0, rows}, {0, cols}), slots[side][slot], last(computes, 2)),
                      slots[side][slot], bytes, part, operand));
      }
      std::vector<uint32_t> deps = loads;
      const std::vector<uint32_t> drained = last(drains, 2);
      deps.insert(deps.end(), drained.begin(), drained.end());
      std::vector<uint32_t> group_computes;
      for (uint64_t i = items.begin; i < items.end; ++i) {
        const std::vector<uint32_t> ids =
            compute(numbered("b", i) + ".", job.m.size(), job.k, job.n, reads[0], reads[1], slots[2][slot], deps);
        group_computes.insert(group_computes.end(), ids.begin(), ids.end());
      }
      computes.push_back(group_computes);
      drains.push_back(finishTile(numbered("g", t), items, job.m, {0, job.n}, slots[2][slot], group_computes));
    }
    finishFusedCore();
    tiles += groups.size();
    vmem_held = std::max(vmem_held, resident + (groups.size() > 1 ? 2 : 1) * per_item * group);
    if (tiling_text.empty()) tiling_text = numbered("items ", group) + " per tile";
    describeSplit();
    return;
  }

  const GemmTiling tiling = chooseGemmTiling(item, vmem, align, m_tile_for_cycles ? &model : nullptr);
  if (tiling_text.empty()) tiling_text = tilingText(tiling);
  vmem_held = std::max(vmem_held, tiling.vmem_bytes);
  uint32_t slots[3][2];
  for (int s = 0; s < 2; ++s) {
    slots[0][s] = addVmem(op, core, numbered("lhs.s", s), job.input_dtype, 0);
    slots[1][s] = addVmem(op, core, numbered("rhs.s", s), job.input_dtype, 0);
    slots[2][s] = addVmem(op, core, numbered("out.s", s), job.output_dtype, 0);
  }
  std::vector<std::vector<uint32_t>> computes;  // per streamed step: the MXU instructions reading its slot
  std::vector<std::vector<uint32_t>> drains;    // per output tile: its store
  size_t step = 0;
  const auto loadPart = [&](int side, const std::string& part, Span items, Span rows, Span cols,
                            std::vector<uint32_t> deps) {
    const GemmOperand& operand = side == 0 ? job.lhs : job.rhs;
    const uint64_t bytes = bytesOf(operand, items.size(), rows.size(), cols.size());
    const uint32_t buffer = slots[side][step % 2];
    grow(buffer, bytes);
    return converted(loadTensor(op, core, part, operand.tensor, rangeOf(operand, items, rows, cols),
                                layoutOf(operand, items, rows, cols), buffer, std::move(deps)),
                     buffer, bytes, part, operand);
  };
  const auto storePart = [&](const std::string& part, Span items, Span rows, Span cols, uint32_t buffer,
                             const std::vector<uint32_t>& deps) {
    drains.push_back(finishTile(part, items, rows, cols, buffer, deps));
  };

  for (uint64_t index = job.items.begin; index < job.items.end; ++index) {
    const Span items{index, index + 1};
    const std::string prefix = count > 1 ? numbered("b", index) + "." : "";
    const Span all_k{job.k_offset, job.k_offset + job.k};
    if (tiling.blocking == GemmBlocking::kKSplit) {
      for (const Span rows : tilesOf(job.m, tiling.m_tile)) {
        for (const Span cols : tilesOf({0, job.n}, tiling.n_block)) {
          const uint32_t out_slot = slots[2][drains.size() % 2];
          const std::vector<uint32_t> drained = last(drains, 2);
          std::vector<uint32_t> accumulate;
          for (const Span ks : tilesOf(all_k, tiling.k_tile)) {
            const std::string part =
                prefix + numbered("m", rows.begin) + numbered(".n", cols.begin) + numbered(".k", ks.begin);
            const uint32_t lhs = loadPart(0, "lhs." + part, items, rows, ks, last(computes, 2));
            const uint32_t rhs = loadPart(1, "rhs." + part, items, ks, cols, last(computes, 2));
            std::vector<uint32_t> deps = {lhs, rhs};
            deps.insert(deps.end(), drained.begin(), drained.end());
            accumulate = compute(part + ".", rows.size(), ks.size(), cols.size(), slots[0][step % 2],
                                 slots[1][step % 2], out_slot, deps);
            computes.push_back(accumulate);
            ++step;
            ++tiles;
          }
          storePart(prefix + numbered("m", rows.begin) + numbered(".n", cols.begin), items, rows, cols, out_slot,
                    accumulate);
        }
      }
      continue;
    }
    // Resident blockings: one operand's block stays while the other's tiles stream.
    const bool rhs_resident = tiling.blocking != GemmBlocking::kLhsResident;
    const std::vector<Span> blocks = rhs_resident ? tilesOf({0, job.n}, tiling.n_block) : tilesOf(job.m, tiling.m_tile);
    const std::vector<Span> streamed =
        rhs_resident ? tilesOf(job.m, tiling.m_tile) : tilesOf({0, job.n}, tiling.n_block);
    uint32_t resident_buffer = addVmem(op, core, rhs_resident ? "rhs.block" : "lhs.block", job.input_dtype, 0);
    std::vector<uint32_t> block_readers;  // the previous block's computes
    for (const Span block : blocks) {
      const int side = rhs_resident ? 1 : 0;
      const GemmOperand& operand = rhs_resident ? job.rhs : job.lhs;
      const Span rows = rhs_resident ? all_k : block;
      const Span cols = rhs_resident ? block : all_k;
      const uint64_t bytes = bytesOf(operand, 1, rows.size(), cols.size());
      grow(resident_buffer, bytes);
      const std::string block_part = prefix + (rhs_resident ? "n" : "m") + std::to_string(block.begin);
      uint32_t resident = UINT32_MAX;
      for (const Span tile : streamed) {
        const Span out_rows = rhs_resident ? tile : block;
        const Span out_cols = rhs_resident ? block : tile;
        const std::string part = prefix + numbered("m", out_rows.begin) + numbered(".n", out_cols.begin);
        const uint32_t streamed_load = rhs_resident
                                           ? loadPart(0, "lhs." + part, items, out_rows, all_k, last(computes, 2))
                                           : loadPart(1, "rhs." + part, items, all_k, out_cols, last(computes, 2));
        if (resident == UINT32_MAX) {  // the block follows the first streamed tile (lhs before rhs, as written)
          const std::string part = (side == 1 ? "rhs." : "lhs.") + block_part;
          resident = converted(loadTensor(op, core, part, operand.tensor, rangeOf(operand, items, rows, cols),
                                          layoutOf(operand, items, rows, cols), resident_buffer, block_readers),
                               resident_buffer, bytes, part, operand);
          block_readers.clear();
        }
        const uint32_t out_slot = slots[2][drains.size() % 2];
        std::vector<uint32_t> deps = {resident, streamed_load};
        const std::vector<uint32_t> drained = last(drains, 2);
        deps.insert(deps.end(), drained.begin(), drained.end());
        const uint32_t lhs_buffer = rhs_resident ? slots[0][step % 2] : resident_buffer;
        const uint32_t rhs_buffer = rhs_resident ? resident_buffer : slots[1][step % 2];
        const std::vector<uint32_t> ids =
            compute(part + ".", out_rows.size(), job.k, out_cols.size(), lhs_buffer, rhs_buffer, out_slot, deps);
        computes.push_back(ids);
        block_readers.insert(block_readers.end(), ids.begin(), ids.end());
        ++step;
        ++tiles;
        storePart(part, items, out_rows, out_cols, out_slot, ids);
      }
    }
  }
  finishFusedCore();
  describeSplit();
}

void Lowerer::finishGemm(const ir::Op& op, const std::vector<const ir::Op*>& epilogue, std::vector<Access> stores,
                         std::vector<std::vector<Access>> epilogue_stores, const std::string& tiling, uint64_t tiles,
                         uint64_t vmem) {
  recordLowering(op, tiling, tiles, vmem);
  finish(op, std::move(stores));
  if (epilogue.empty()) return;
  Fused members;
  members.ops = epilogue;
  members.stores = std::move(epilogue_stores);
  finishFused(members, "fused behind " + op.name, tiles, vmem);
}

// A matmul whose rhs has no batch dimensions folds its lhs batch into M (one big
// product, split by rows over the cores); otherwise the batch is split over the cores.
void Lowerer::lowerMatMul(const ir::Op& op, const std::vector<const ir::Op*>& epilogue) {
  using Axis = GemmOperand::Axis;
  const ir::Tensor& a = m_graph.tensor(op.inputs[0]);
  const ir::Tensor& b = m_graph.tensor(op.inputs[1]);
  const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
  checkMxuDType(op, a.dtype);
  const size_t rank = out.shape.size();
  const uint64_t m = static_cast<uint64_t>(out.shape[rank - 2]);
  const uint64_t n = static_cast<uint64_t>(out.shape[rank - 1]);
  const uint64_t k = static_cast<uint64_t>(op.transpose_a ? a.shape[a.shape.size() - 2] : a.shape.back());
  if (k == 0 && m * n > 0) {
    throw Error(ErrorKind::kUnsupported, "a matmul with an empty contracting dimension (K = 0) is not supported");
  }
  const auto batchOf = [](const ir::Shape& shape) {
    return static_cast<uint64_t>(ir::elementCount(ir::Shape(shape.begin(), shape.end() - 2)));
  };
  const uint64_t batch = batchOf(out.shape);
  const uint64_t cores = static_cast<uint64_t>(m_hw.chip().tensor_cores());
  GemmJob job;
  job.op = &op;
  std::vector<std::vector<Access>> epilogue_stores(epilogue.size());
  job.epilogue = &epilogue;
  job.epilogue_stores = &epilogue_stores;
  job.k = k;
  job.n = n;
  job.input_dtype = a.dtype;
  job.output_dtype = out.dtype;
  job.transpose_lhs = op.transpose_a;
  job.transpose_rhs = op.transpose_b;
  const int a_source = loadedTensor(op.inputs[0]), b_source = loadedTensor(op.inputs[1]);
  const uint64_t a_bytes = m_graph.tensor(a_source).bytes(), b_bytes = m_graph.tensor(b_source).bytes();
  job.lhs = {a_source, a_bytes, true, Axis::kWhole, 1, 1};
  job.rhs = {b_source, b_bytes, true, Axis::kWhole, 1, 1};
  job.out = {op.outputs[0], out.bytes(), true, Axis::kWhole, 1, 1};
  // Row-major matrices: [.., m, k] (or [.., k, m] transposed), [.., k, n] (or [.., n, k]), [.., m, n].
  const auto asMatrix = [](GemmOperand& operand, bool transposed) {
    operand.matrix = true;
    operand.transposed = transposed;
  };
  // Elementwise ops fused into the operands' loads (operandPrologues).
  const auto prologues = [&] {
    if (m_operand_prologue[static_cast<size_t>(op.inputs[0])] >= 0) job.lhs.prologue = op.inputs[0];
    if (m_operand_prologue[static_cast<size_t>(op.inputs[1])] >= 0) job.rhs.prologue = op.inputs[1];
  };
  std::vector<Access> stores;
  uint64_t tiles = 0, vmem = 0;
  std::string tiling;
  // (A transposed lhs is [..., K, M]: its rows do not stack, so only batch 1 folds.)
  if (batchOf(b.shape) == 1 && (!op.transpose_a || batch == 1)) {
    job.m_total = batch * m;
    job.rhs.batched = false;
    if (!op.transpose_a) job.lhs = {a_source, a_bytes, true, Axis::kM, job.m_total, 1};
    job.rhs.axis = op.transpose_b ? Axis::kN : Axis::kK;
    job.rhs.extent = op.transpose_b ? n : k;
    job.out = {op.outputs[0], out.bytes(), true, Axis::kM, job.m_total, 1};
    asMatrix(job.lhs, op.transpose_a);
    asMatrix(job.rhs, op.transpose_b);
    asMatrix(job.out, false);
    prologues();
    job.items = {0, 1};
    const std::vector<Span> rows = splitEvenly({0, job.m_total}, cores);
    for (uint32_t core = 0; core < rows.size(); ++core) {
      job.m = rows[core];
      emitGemm(job, core, stores, tiles, vmem, tiling);
    }
  } else {
    job.m_total = m;
    job.m = {0, m};
    job.items_total = batch;
    const bool a_batched = batchOf(a.shape) > 1, b_batched = batchOf(b.shape) > 1;
    job.lhs = {a_source, a_bytes, a_batched, a_batched ? Axis::kItems : Axis::kWhole, batch, 1};
    job.rhs = {b_source, b_bytes, b_batched, b_batched ? Axis::kItems : Axis::kWhole, batch, 1};
    job.out = {op.outputs[0], out.bytes(), true, Axis::kItems, batch, 1};
    // A batch broadcast only in part ([2, 1, m, k] against [1, 3, k, n]) is not one matrix per item.
    if (!a_batched || batchOf(a.shape) == batch) asMatrix(job.lhs, op.transpose_a);
    if (!b_batched || batchOf(b.shape) == batch) asMatrix(job.rhs, op.transpose_b);
    asMatrix(job.out, false);
    prologues();
    const std::vector<Span> items = splitEvenly({0, batch}, cores);
    for (uint32_t core = 0; core < items.size(); ++core) {
      job.items = items[core];
      emitGemm(job, core, stores, tiles, vmem, tiling);
    }
  }
  finishGemm(op, epilogue, std::move(stores), std::move(epilogue_stores), tiling, tiles, vmem);
}

// A convolution runs on the MXUs as an implicit GEMM, one per group:
//   forward      y[N*OH*OW, M/g]      = im2col(x)[N*OH*OW, C/g*KH*KW] x w^T
//   input grad   cols[N*OH*OW, C/g*KH*KW] = dy[N*OH*OW, M/g] x w, then col2im adds the
//                columns into dx (the same MACs as the forward pass; the col2im adds are
//                not charged to the vector unit yet)
//   weight grad  dw[M/g, C/g*KH*KW]   = dy^T[M/g, N*OH*OW]             x im2col(x)
// The patch matrix is not built: its tiles read the image (the lhs' bytes are the
// image's). The GEMM's rows are split over the cores; operands laid out along those
// rows (whole images, or dy's channels for the weight gradient) split with them.
void Lowerer::lowerConv(const ir::Op& op, const std::vector<const ir::Op*>& epilogue) {
  using Axis = GemmOperand::Axis;
  const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
  const ir::Tensor& first = m_graph.tensor(op.inputs[0]);
  const ir::Tensor& second = m_graph.tensor(op.inputs[1]);
  checkMxuDType(op, out.dtype);
  const ir::Shape& w = op.type == OpType::kConvGradWeight ? out.shape : second.shape;
  const ir::Shape& x = op.type == OpType::kConvGradInput ? out.shape : first.shape;
  const ir::Shape& y = op.type == OpType::kConv            ? out.shape
                       : op.type == OpType::kConvGradInput ? first.shape
                                                           : second.shape;
  const auto g = static_cast<uint64_t>(op.conv.group);
  const auto batch = static_cast<uint64_t>(x[0]);
  const auto in_per_group = static_cast<uint64_t>(w[1]);
  const uint64_t out_per_group = static_cast<uint64_t>(w[0]) / g;
  const uint64_t window = static_cast<uint64_t>(w[2] * w[3]);
  const uint64_t pixels = static_cast<uint64_t>(y[2] * y[3]);
  GemmJob job;
  job.op = &op;
  std::vector<std::vector<Access>> epilogue_stores(epilogue.size());
  job.epilogue = &epilogue;
  job.epilogue_stores = &epilogue_stores;
  job.items_total = g;
  job.items = {0, g};
  job.input_dtype = first.dtype;  // the output's, but int8 into int32
  job.output_dtype = out.dtype;
  // With groups, channels of one group are strided in memory: dependencies take whole tensors.
  const bool grouped = g > 1;
  const auto along = [&](int tensor, Axis axis, uint64_t extent, uint64_t granule) {
    const int source = loadedTensor(tensor);
    GemmOperand operand = grouped ? GemmOperand{source, m_graph.tensor(source).bytes(), true, Axis::kWhole, 1, 1}
                                  : GemmOperand{source, m_graph.tensor(source).bytes(), true, axis, extent, granule};
    if (m_operand_prologue[static_cast<size_t>(tensor)] >= 0) operand.prologue = tensor;
    return operand;
  };
  switch (op.type) {
    case OpType::kConv:
      job.m_total = batch * pixels, job.k = in_per_group * window, job.n = out_per_group;
      job.lhs = along(op.inputs[0], Axis::kM, job.m_total, pixels);
      job.rhs = along(op.inputs[1], Axis::kWhole, 1, 1);
      job.out = along(op.outputs[0], Axis::kM, job.m_total, pixels);
      break;
    case OpType::kConvGradInput:
      job.m_total = batch * pixels, job.k = out_per_group, job.n = in_per_group * window;
      job.lhs = along(op.inputs[0], Axis::kM, job.m_total, pixels);
      job.rhs = along(op.inputs[1], Axis::kWhole, 1, 1);
      job.out = along(op.outputs[0], Axis::kM, job.m_total, pixels);
      break;
    default:  // weight gradient: rows are output channels, the batch's pixels are contracted
      job.m_total = out_per_group, job.k = batch * pixels, job.n = in_per_group * window;
      job.lhs = along(op.inputs[1], Axis::kK, job.k, pixels);
      job.rhs = along(op.inputs[0], Axis::kK, job.k, pixels);
      job.out = along(op.outputs[0], Axis::kM, job.m_total, 1);
      break;
  }
  std::vector<Access> stores;
  uint64_t tiles = 0, vmem = 0;
  std::string tiling;
  const auto cores = static_cast<uint64_t>(m_hw.chip().tensor_cores());
  // A weight gradient with fewer output channels per core than the MXU has columns would
  // leave each core's MXUs mostly idle if its rows were split: the cores split the batch
  // (K) instead, each summing its images, and core 0 adds the partial sums.
  const bool split_k = op.type == OpType::kConvGradWeight && !grouped && epilogue.empty() && cores > 1 &&
                       batch >= cores && job.m_total < cores * static_cast<uint64_t>(m_hw.mxu().cols());
  if (split_k) {
    const std::vector<Span> images = splitEvenly({0, batch}, cores);
    job.m = {0, job.m_total};
    job.k_total = job.k;
    job.partial_scratch = scratchBuffer(out.bytes() * images.size());
    std::vector<Access> partials;
    for (uint32_t core = 0; core < images.size(); ++core) {
      job.k_offset = images[core].begin * pixels;
      job.k = images[core].size() * pixels;
      job.partial_offset = core * out.bytes();
      emitGemm(job, core, partials, tiles, vmem, tiling);
    }
    std::vector<uint32_t> written;
    for (const Access& partial : partials) written.push_back(partial.instruction);
    stores.push_back(addPartialSums(op, job.partial_scratch, 0, images.size(), written));
    tiling = "cores_split_k " + tiling;
  } else {
    const std::vector<Span> rows = splitEvenly({0, job.m_total}, cores);
    for (uint32_t core = 0; core < rows.size(); ++core) {
      job.m = rows[core];
      emitGemm(job, core, stores, tiles, vmem, tiling);
    }
  }
  finishGemm(op, epilogue, std::move(stores), std::move(epilogue_stores), tiling, tiles, vmem);
}

}  // namespace tpusim::lowering
