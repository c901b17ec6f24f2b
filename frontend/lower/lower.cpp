#include "frontend/lower/lower.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "frontend/lower/lowerer.hpp"
#include "frontend/lower/vector_costs.hpp"
#include "frontend/passes/fusion.hpp"
#include "frontend/passes/layers.hpp"
#include "frontend/passes/mxu_padding.hpp"
#include "frontend/passes/placement.hpp"
#include "sim/common/error.hpp"
#include "traces/program_format.hpp"

namespace tpusim {

namespace lowering {

namespace {

using ir::OpType;

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

program::BufferRole toBufferRole(ir::TensorRole role) {
  switch (role) {
    case ir::TensorRole::kInput:
    case ir::TensorRole::kLabel: return program::INPUT;
    case ir::TensorRole::kWeight:
    case ir::TensorRole::kOptimizerState:
    case ir::TensorRole::kConstant: return program::WEIGHT;
    case ir::TensorRole::kGradient: return program::GRADIENT;
    case ir::TensorRole::kActivation:
    case ir::TensorRole::kLoss: return program::ACTIVATION;
  }
  return program::ROLE_UNSPECIFIED;
}

// The descriptor: `layout` within the HBM buffer that starts at `buffer_offset`.
void setDma(program::Instruction& ins, program::MemorySpace src, program::MemorySpace dst, uint64_t buffer_offset,
            const HbmLayout& layout) {
  program::DmaTransfer* dma = ins.mutable_dma();
  dma->set_src(src);
  dma->set_dst(dst);
  dma->set_bytes(layout.bytes());
  dma->set_hbm_address(buffer_offset + layout.offset);
  if (layout.rows > 1) {
    dma->set_rows(layout.rows);
    dma->set_row_bytes(layout.row_bytes);
    dma->set_row_stride(layout.row_stride);
  }
  ins.set_bytes(layout.bytes());
}

}  // namespace

void addDeps(program::Instruction& ins, std::vector<uint32_t> deps) {
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  for (uint32_t dep : deps) {
    if (dep != kNone) ins.add_deps(dep);
  }
}

HbmLayout contiguousAt(uint64_t begin, uint64_t bytes, uint64_t total) {
  return HbmLayout::contiguous(bytes >= total ? 0 : std::min(begin, total - bytes), bytes);
}

HbmLayout shareOf(uint64_t total, uint64_t bytes, Span part, uint64_t whole) {
  const uint64_t begin =
      whole == 0 ? 0 : static_cast<uint64_t>(static_cast<unsigned __int128>(total) * part.begin / whole);
  return contiguousAt(begin, bytes, total);
}

HbmLayout spreadRows(uint64_t total, uint64_t rows, uint64_t row_bytes) {
  if (rows <= 1 || row_bytes == 0) return HbmLayout::contiguous(0, rows * row_bytes);
  const uint64_t room = total > row_bytes ? total - row_bytes : 0;
  return {0, rows, row_bytes, room / (rows - 1)};
}

std::vector<Span> splitEvenly(Span whole, uint64_t parts) {
  std::vector<Span> spans;
  const uint64_t extent = whole.size();
  if (extent == 0) return {whole};
  const uint64_t chunk = (extent + parts - 1) / parts;
  for (uint64_t start = 0; start < extent; start += chunk) {
    spans.push_back({whole.begin + start, whole.begin + std::min(extent, start + chunk)});
  }
  return spans;
}

std::vector<Span> tilesOf(Span whole, uint64_t tile) {
  std::vector<Span> spans;
  if (whole.size() == 0 || tile == 0) return {whole};
  for (uint64_t start = whole.begin; start < whole.end; start += tile) {
    spans.push_back({start, std::min(whole.end, start + tile)});
  }
  return spans;
}

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

std::string numbered(const char* prefix, uint64_t number) {
  std::string text(prefix);
  text.append(std::to_string(number));
  return text;
}

uint64_t fractionOf(uint64_t bytes, uint64_t part, uint64_t whole) {
  if (whole == 0 || part >= whole) return bytes;
  const unsigned __int128 product = static_cast<unsigned __int128>(bytes) * part;
  return static_cast<uint64_t>((product + whole - 1) / whole);
}

program::DType toProgramDType(DType dtype) {
  switch (dtype) {
    case DType::kF32: return program::F32;
    case DType::kBF16: return program::BF16;
    case DType::kF16: return program::F16;
    case DType::kInt8: return program::INT8;
    case DType::kUInt8: return program::UINT8;
    case DType::kInt32: return program::INT32;
    case DType::kInt64: return program::INT64;
    case DType::kUInt32: return program::UINT32;
    case DType::kUInt64: return program::UINT64;
    case DType::kBool: return program::BOOL;
    case DType::kF64: return program::F64;
  }
  return program::DTYPE_UNSPECIFIED;
}

program::Phase toProgramPhase(ir::Phase phase) {
  switch (phase) {
    case ir::Phase::kForward: return program::FORWARD;
    case ir::Phase::kBackward: return program::BACKWARD;
    case ir::Phase::kUpdate: return program::UPDATE;
    case ir::Phase::kCollective: return program::COLLECTIVE;
    case ir::Phase::kLossScaling: return program::LOSS_SCALING;
  }
  return program::PHASE_UNSPECIFIED;
}

Lowerer::Lowerer(const ir::Graph& graph, const MemoryPlan& plan, const config::HardwareConfig& hw,
                 const LowerOptions& options, program::ChipProgram& chip)
    : m_graph(graph),
      m_hw(hw),
      m_f32_passes(matmulPassesOf(options.matmul_precision)),
      m_tile_for_cycles(options.tiling_objective == "cycles"),
      m_topology(options.topology),
      m_bucket_limit(options.all_reduce_bucket_bytes),
      m_chip(chip),
      m_plan(plan),
      m_layers(assignLayers(graph)),
      m_on_chip(onChipOnly(graph)),
      m_cast_source(operandCastSources(graph)),
      m_op_writing(graph.tensors().size(), 0),
      m_prologue(reductionPrologues(graph)),
      m_operand_prologue(operandPrologues(graph)),
      m_last_load(static_cast<size_t>(hw.chip().tensor_cores()), kNone) {}

void Lowerer::run() {
  for (size_t i = 0; i < m_graph.ops().size(); ++i) {
    for (int output : m_graph.ops()[i].outputs) m_op_writing[static_cast<size_t>(output)] = i;
  }
  createHbmBuffers();
  const std::vector<ir::Op>& ops = m_graph.ops();
  for (size_t index = 0; index < ops.size(); ++index) {
    const ir::Op& op = ops[index];
    m_loads_before_op = m_last_load;
    // A fusion group's ops follow its leader and are lowered with it.
    std::vector<const ir::Op*> members;
    if (op.fusion_group == static_cast<int>(index)) {
      while (index + 1 < ops.size() && ops[index + 1].fusion_group == op.fusion_group) {
        members.push_back(&ops[++index]);
      }
    }
    ++m_kernel;  // each op or fused group is one kernel, with the reductions it waits on
    try {
      emitPendingReductions(&op, members);
      lowerOp(op, members);
    } catch (const Error& error) {
      throw error.within("op '" + op.name + "'");
    }
  }
  emitPendingReductions(nullptr, {});
  program::MemoryPlanSummary* memory = m_chip.mutable_memory();
  memory->set_peak_bytes(m_plan.peak_bytes + m_scratch_bytes);
  memory->set_live_peak_bytes(m_plan.live_peak_bytes);
  if (m_plan.live_peak_op >= 0) {
    memory->set_live_peak_op(m_graph.ops()[static_cast<size_t>(m_plan.live_peak_op)].name);
  }
  memory->set_persistent_bytes(m_plan.persistent_bytes);
  memory->set_unplanned_bytes(m_plan.unplanned_bytes);
  memory->set_scratch_bytes(m_scratch_bytes);
  if (m_scratch != kNone) m_chip.mutable_buffers(static_cast<int>(m_scratch))->set_bytes(m_scratch_bytes);
  const double capacity = m_hw.hbm().capacity_gib() * 1024.0 * 1024.0 * 1024.0;
  if (static_cast<double>(memory->peak_bytes()) > capacity) {
    throw Error(ErrorKind::kResource, "the step needs " + mib(memory->peak_bytes()) + " of HBM with scratch but " +
                                          m_hw.name() + " has " + mib(static_cast<uint64_t>(capacity)));
  }
}

void Lowerer::createHbmBuffers() {
  m_hbm_buffer.assign(m_graph.tensors().size(), kNone);
  for (const ir::Tensor& tensor : m_graph.tensors()) {
    if (tensor.alias_of >= 0) continue;
    program::Buffer* buffer = m_chip.add_buffers();
    buffer->set_id(static_cast<uint32_t>(m_chip.buffers_size() - 1));
    buffer->set_name(tensor.name);
    buffer->set_space(program::HBM);
    buffer->set_dtype(toProgramDType(tensor.dtype));
    for (int64_t dim : tensor.shape) buffer->add_shape(dim);
    buffer->set_bytes(tensor.bytes());
    buffer->set_role(toBufferRole(tensor.role));
    buffer->set_offset(m_plan.offset[static_cast<size_t>(tensor.id)]);
    m_hbm_buffer[static_cast<size_t>(tensor.id)] = buffer->id();
  }
  // A view shares its root's buffer; the root may be a later tensor (a reshape that reads
  // an all-reduce inserted after it was built).
  for (const ir::Tensor& tensor : m_graph.tensors()) {
    int root = tensor.id;
    while (m_graph.tensor(root).alias_of >= 0) root = m_graph.tensor(root).alias_of;
    m_hbm_buffer[static_cast<size_t>(tensor.id)] = m_hbm_buffer[static_cast<size_t>(root)];
  }
  m_hazards.resize(static_cast<size_t>(m_chip.buffers_size()));
  const double capacity = m_hw.hbm().capacity_gib() * 1024.0 * 1024.0 * 1024.0;
  if (static_cast<double>(m_plan.peak_bytes) <= capacity) return;
  // Name the largest tensors live where the most bytes are.
  const int at = m_plan.live_peak_op;
  std::vector<const ir::Tensor*> live;
  for (const ir::Tensor& tensor : m_graph.tensors()) {
    const size_t id = static_cast<size_t>(tensor.id);
    if (tensor.alias_of < 0 && m_plan.first_op[id] <= at && at <= m_plan.last_op[id]) live.push_back(&tensor);
  }
  std::sort(live.begin(), live.end(),
            [](auto* a, auto* b) { return a->bytes() > b->bytes() || (a->bytes() == b->bytes() && a->id < b->id); });
  std::string names;
  for (size_t i = 0; i < std::min<size_t>(3, live.size()); ++i) {
    names += (i ? ", " : "") + live[i]->name + " " + mib(live[i]->bytes());
  }
  const std::string where = at >= 0 ? " at op '" + m_graph.ops()[static_cast<size_t>(at)].name + "'" : "";
  const bool training = std::any_of(m_graph.tensors().begin(), m_graph.tensors().end(),
                                    [](const ir::Tensor& t) { return t.role == ir::TensorRole::kGradient; });
  const std::string remedies = training ? "use a smaller batch, --remat all (recompute activations in the backward "
                                          "pass), --micro-batches, or a larger preset"
                                        : "use a smaller batch, or a larger preset";
  throw Error(ErrorKind::kResource, "the step needs " + mib(m_plan.peak_bytes) + " of HBM (" +
                                        mib(m_plan.live_peak_bytes) + " live at once" + where + ") but " + m_hw.name() +
                                        " has " + mib(static_cast<uint64_t>(capacity)) + " (largest live: " + names +
                                        "); " + remedies);
}

ByteRange Lowerer::rowRange(uint64_t total, uint64_t extent, uint64_t granule, Span rows) {
  if (extent == 0 || granule == 0 || extent % granule != 0) return {0, total};
  const uint64_t blocks = extent / granule;
  const uint64_t unit = total / blocks;
  return {rows.begin / granule * unit, (rows.end + granule - 1) / granule * unit};
}

uint32_t Lowerer::addVmem(const ir::Op& op, uint32_t core, const std::string& what, DType dtype, uint64_t bytes) {
  program::Buffer* buffer = m_chip.add_buffers();
  buffer->set_id(static_cast<uint32_t>(m_chip.buffers_size() - 1));
  buffer->set_name(op.name + ".c" + std::to_string(core) + "." + what);
  buffer->set_space(program::VMEM);
  buffer->set_dtype(toProgramDType(dtype));
  buffer->set_bytes(bytes);
  buffer->set_role(program::STAGING);
  buffer->set_core(core);
  m_hazards.emplace_back();
  return buffer->id();
}

uint32_t Lowerer::unpackOps(DType dtype) const {
  switch (dtype) {
    case DType::kF16: return static_cast<uint32_t>(m_hw.vpu().f16_unpack_ops());
    case DType::kBF16: return static_cast<uint32_t>(m_hw.vpu().bf16_convert_ops());
    default: return 0;
  }
}

uint32_t Lowerer::packOps(DType dtype) const {
  switch (dtype) {
    case DType::kF16: return static_cast<uint32_t>(m_hw.vpu().f16_pack_ops());
    case DType::kBF16: return static_cast<uint32_t>(m_hw.vpu().bf16_convert_ops());
    default: return 0;
  }
}

program::Instruction& Lowerer::newInstruction(const ir::Op& op, const std::string& part, program::Unit unit,
                                              uint32_t core, uint32_t unit_index) {
  program::Instruction* ins = m_chip.add_instructions();
  ins->set_id(static_cast<uint32_t>(m_chip.instructions_size() - 1));
  ins->set_part(part);  // its name is "<op>.c<core>.<part>" (instructionName)
  ins->set_op(op.name);
  ins->set_unit(unit);
  ins->set_core(core);
  ins->set_unit_index(unit_index);
  ins->set_kernel(m_kernel);
  return *ins;
}

uint32_t Lowerer::load(const ir::Op& op, uint32_t core, const std::string& part, uint32_t hbm, ByteRange range,
                       const HbmLayout& layout, uint32_t vmem, const std::vector<uint32_t>& deps) {
  if (layout.bytes() > std::numeric_limits<uint32_t>::max()) {
    throw Error(ErrorKind::kInternal, "a tile of " + mib(layout.bytes()) + " is larger than any VMEM");
  }
  program::Instruction& ins = newInstruction(op, "load." + part, program::DMA, core, 0);
  setDma(ins, program::HBM, program::VMEM, m_chip.buffers(static_cast<int>(hbm)).offset(), layout);
  ins.add_reads(hbm);
  ins.add_writes(vmem);
  std::vector<uint32_t> all = deps;
  Hazards& hazards = m_hazards[hbm];
  // Tile t of a tiled op waits for tile t-2's compute, which waited for tile t-2's loads: where
  // one of those read the same bytes, tile t's load waits for their stores through it. Naming
  // them again would give each of a tensor's n tiles that are read whole (a strided read) all
  // n stores that wrote it, n * n dependencies in all.
  if (!writersWaitedFor(hbm, range, deps)) hazards.writers.appendOverlapping(range, all);
  addDeps(ins, std::move(all));
  m_load_reads[ins.id()] = {hbm, range, hazards.writers.version()};
  hazards.readers.push_back({range, ins.id()});
  m_last_load[core] = ins.id();
  return ins.id();
}

bool Lowerer::writersWaitedFor(uint32_t hbm, ByteRange range, const std::vector<uint32_t>& deps) const {
  const uint64_t version = m_hazards[hbm].writers.version();
  const auto covers = [&](uint32_t id) {
    const auto read = m_load_reads.find(id);
    return read != m_load_reads.end() && read->second.hbm == hbm && read->second.range.begin <= range.begin &&
           range.end <= read->second.range.end && read->second.writers_version == version;
  };
  for (uint32_t dep : deps) {
    if (dep == kNone || dep >= static_cast<uint32_t>(m_chip.instructions_size())) continue;
    if (covers(dep)) return true;
    for (uint32_t before : m_chip.instructions(static_cast<int>(dep)).deps()) {
      if (covers(before)) return true;
    }
  }
  return false;
}

uint32_t Lowerer::store(const ir::Op& op, uint32_t core, const std::string& part, uint32_t hbm, ByteRange range,
                        const HbmLayout& layout, uint32_t vmem, const std::vector<uint32_t>& deps) {
  const uint32_t engine = static_cast<uint32_t>(m_hw.dma().engines_per_core() - 1);
  program::Instruction& ins =
      newInstruction(op, "store" + (part.empty() ? "" : "." + part), program::DMA, core, engine);
  setDma(ins, program::VMEM, program::HBM, m_chip.buffers(static_cast<int>(hbm)).offset(), layout);
  ins.add_reads(vmem);
  ins.add_writes(hbm);
  std::vector<uint32_t> all = deps;
  const Hazards& hazards = m_hazards[hbm];
  hazards.readers.appendOverlapping(range, all);  // write after read
  hazards.writers.appendOverlapping(range, all);  // write after write
  // The bytes may have held a tensor that is dead now; its last readers are loads emitted
  // before this op, and each core's loads run in order on its engine 0.
  const int out = op.outputs[0];
  if (hbm == hbmOf(out) && m_plan.reuses[static_cast<size_t>(out)]) {
    all.insert(all.end(), m_loads_before_op.begin(), m_loads_before_op.end());
  }
  addDeps(ins, std::move(all));
  return ins.id();
}

uint32_t Lowerer::vectorInstruction(const ir::Op& op, const std::string& part, uint32_t core, program::VectorKind kind,
                                    uint64_t elements, uint32_t ops_per_element, DType dtype,
                                    const std::vector<uint32_t>& reads, uint32_t write, uint64_t bytes,
                                    std::vector<uint32_t> deps) {
  program::Instruction& ins = newInstruction(op, part, program::VPU, core, 0);
  program::VectorOp* vector = ins.mutable_vector();
  vector->set_kind(kind);
  vector->set_elements(elements);
  vector->set_ops_per_element(ops_per_element);
  vector->set_dtype(toProgramDType(dtype));
  ins.set_flops(elements * ops_per_element);
  ins.set_bytes(bytes);
  for (uint32_t vmem : reads) ins.add_reads(vmem);
  ins.add_writes(write);
  addDeps(ins, std::move(deps));
  return ins.id();
}

void Lowerer::finish(const ir::Op& op, std::vector<Access> stores) {
  Hazards& hazards = m_hazards[hbmOf(op.outputs[0])];
  hazards.writers.assign(std::move(stores));
  hazards.readers.clear();
}

void Lowerer::recordLowering(const ir::Op& op, const std::string& tiling, uint64_t tiles, uint64_t vmem_bytes) {
  program::OpLowering* record = m_chip.add_ops();
  record->set_op(op.name);
  record->set_op_type(ir::opTypeName(op.type));
  record->set_tiling(tiling);
  record->set_tiles(tiles);
  record->set_vmem_bytes(vmem_bytes);
  // By the op's output: `op` may be a copy (Lowerer::sourced).
  record->set_layer(m_layers[m_op_writing[static_cast<size_t>(op.outputs[0])]]);
  record->set_phase(toProgramPhase(op.phase));
  if (!op.mxu_padded.empty()) {
    const std::array<int64_t, 3> gemm = gemmShapeOf(m_graph, op);
    const double padded = static_cast<double>(op.mxu_padded[0]) * static_cast<double>(op.mxu_padded[1]) *
                          static_cast<double>(op.mxu_padded[2]);
    const double useful = static_cast<double>(gemm[0]) * static_cast<double>(gemm[1]) * static_cast<double>(gemm[2]);
    record->set_mxu_mapping_efficiency(padded > 0 ? useful / padded : 0.0);
  }
}

uint64_t Lowerer::vmemBytes() const {
  return static_cast<uint64_t>(m_hw.vmem().capacity_mib() * 1024.0 * 1024.0);
}

uint64_t Lowerer::streamTileBytes() const {
  return static_cast<uint64_t>(m_hw.vmem().stream_tile_kib() * 1024.0);
}

uint32_t Lowerer::scratchBuffer(uint64_t bytes) {
  if (m_scratch == kNone) {
    program::Buffer* buffer = m_chip.add_buffers();
    buffer->set_id(static_cast<uint32_t>(m_chip.buffers_size() - 1));
    buffer->set_name("scratch");
    buffer->set_space(program::HBM);
    buffer->set_dtype(program::F32);
    buffer->set_role(program::ACTIVATION);
    buffer->set_offset(m_plan.peak_bytes);
    m_hazards.emplace_back();
    m_scratch = buffer->id();
  }
  m_scratch_bytes = std::max(m_scratch_bytes, bytes);
  return m_scratch;
}

Access Lowerer::addPartialSums(const ir::Op& op, uint32_t scratch, uint64_t offset, uint64_t count,
                               const std::vector<uint32_t>& partials) {
  const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
  const uint64_t bytes = out.bytes() * count;
  const uint32_t gathered = addVmem(op, 0, "partials", out.dtype, bytes);
  const uint32_t loaded = load(op, 0, "partials", scratch, {offset, offset + bytes},
                               HbmLayout::contiguous(offset, bytes), gathered, partials);
  uint32_t result = gathered, ready = loaded;
  if (count > 1) {
    result = addVmem(op, 0, "out", out.dtype, out.bytes());
    ready = vectorInstruction(op, "combine.vpu", 0, program::ELEMENTWISE,
                              static_cast<uint64_t>(ir::elementCount(out.shape)) * (count - 1), 1, out.dtype,
                              {gathered}, result, bytes + out.bytes(), {loaded});
  }
  const ByteRange range = whole(op.outputs[0]);
  return {range, storeOutput(op, 0, "", range, out.bytes(), result, {ready})};
}

void Lowerer::addPrologue(int tensor, std::vector<int>& inputs, uint32_t& ops, std::vector<int>& computed) const {
  if (std::find(computed.begin(), computed.end(), tensor) != computed.end()) return;
  computed.push_back(tensor);
  const ir::Op& op = m_graph.ops()[m_op_writing[static_cast<size_t>(tensor)]];
  ops += vectorOpsPerElement(op);
  for (int input : sourced(op).inputs) {
    if (m_prologue[static_cast<size_t>(input)]) {
      addPrologue(input, inputs, ops, computed);
    } else if (std::find(inputs.begin(), inputs.end(), input) == inputs.end()) {
      inputs.push_back(input);
    }
  }
}

void Lowerer::lowerOp(const ir::Op& op, const std::vector<const ir::Op*>& fused) {
  // A cast fused into the ops that read it: they load its input and convert each tile.
  if (op.type == OpType::kCast && m_cast_source[static_cast<size_t>(op.outputs[0])] >= 0) {
    m_on_chip[static_cast<size_t>(op.outputs[0])] = true;
    return recordLowering(op, "fused into the ops that read it", 0, 0);
  }
  // An elementwise op the MXU ops that read it compute on their operand tiles (operandPrologues).
  if (m_operand_prologue[static_cast<size_t>(op.outputs[0])] >= 0) {
    m_on_chip[static_cast<size_t>(op.outputs[0])] = true;
    return recordLowering(op, "fused into the MXU ops that read it", 0, 0);
  }
  // An elementwise op run inside the reduction that reads it (reductionPrologues).
  if (m_prologue[static_cast<size_t>(op.outputs[0])]) {
    m_on_chip[static_cast<size_t>(op.outputs[0])] = true;
    return recordLowering(op, "fused into the reduction that reads it", 0, 0);
  }
  // Ops read what fused casts read (Lowerer::sourced); the copies live while the op lowers.
  std::vector<ir::Op> copies;
  copies.reserve(fused.size() + 1);
  copies.push_back(sourced(op));
  std::vector<const ir::Op*> members;
  for (const ir::Op* member : fused) {
    copies.push_back(sourced(*member));
    members.push_back(&copies.back());
  }
  const ir::Op& reading = copies.front();
  if (!fused.empty() && isFusibleElementwise(op.type)) {
    std::vector<const ir::Op*> group = {&reading};
    group.insert(group.end(), members.begin(), members.end());
    return lowerFusedVector(group);
  }
  switch (op.placement == ir::Unit::kUnplaced ? placementOf(op.type) : op.placement) {
    case ir::Unit::kView: return;  // a reshape: the output shares the input's HBM buffer
    case ir::Unit::kMxu: return op.type == OpType::kMatMul ? lowerMatMul(op, members) : lowerConv(op, members);
    case ir::Unit::kDma: return lowerGather(op);
    case ir::Unit::kIci: return lowerCollective(op);
    case ir::Unit::kVpu:
    case ir::Unit::kUnplaced: {
      if (op.type == OpType::kGatherGrad) return lowerGatherGrad(op);
      if ((op.type == OpType::kReduce || op.type == OpType::kReduceSumTo) &&
          m_prologue[static_cast<size_t>(op.inputs[0])]) {
        // The reduction loads its prologue's inputs (each once) and computes it per tile.
        ir::Op fused_reduce = reading;
        fused_reduce.inputs.clear();
        uint32_t prologue_ops = 0;
        std::vector<int> computed;
        addPrologue(op.inputs[0], fused_reduce.inputs, prologue_ops, computed);
        // What streams at the reduced tensor's shape first: lowerVector tiles by its first input.
        const ir::Shape& reduced = m_graph.tensor(op.inputs[0]).shape;
        std::stable_partition(fused_reduce.inputs.begin(), fused_reduce.inputs.end(),
                              [&](int input) { return m_graph.tensor(input).shape == reduced; });
        return lowerVector(fused_reduce, prologue_ops);
      }
      return lowerVector(reading);
    }
  }
}

}  // namespace lowering

program::Program lowerToProgram(const ir::Graph& graph, const HardwareParams& hw, const LowerOptions& options) {
  return lowerToProgram(graph, planMemory(graph), hw, options);
}

program::Program lowerToProgram(const ir::Graph& graph, const MemoryPlan& plan, const HardwareParams& hw,
                                const LowerOptions& options) {
  program::Program result;
  result.set_format(kProgramFormat);
  result.set_schema_version(kProgramSchemaVersion);
  result.set_model(options.model);
  result.set_mode(options.mode);
  result.set_target_hw(hw.name());
  result.set_batch(options.batch);
  if (options.topology && options.topology->numChips() > 1) {
    result.set_replicas(static_cast<uint32_t>(options.topology->numChips()));
    result.set_topology_kind(topologyKindName(options.topology->kind()));
    result.set_topology_shape(options.topology->shapeString());
    if (options.tensor_parallel > 1) result.set_tensor_parallel(static_cast<uint32_t>(options.tensor_parallel));
    if (options.topology->slices() > 1) result.set_hosts(static_cast<uint32_t>(options.topology->slices()));
  }
  program::ChipProgram* chip = result.add_chips();
  chip->set_chip(0);
  if (options.tiling_objective != "cycles" && options.tiling_objective != "bytes") {
    throw Error(ErrorKind::kInvalidConfig,
                "unknown tiling objective '" + options.tiling_objective + "' (choose cycles or bytes)");
  }
  lowering::Lowerer(graph, plan, hw.config(), options, *chip).run();
  return result;
}

uint64_t matmulPassesOf(const std::string& precision) {
  if (precision == "default") return 1;
  if (precision == "high") return 3;
  if (precision == "highest") return 6;
  throw Error(ErrorKind::kInvalidConfig,
              "unknown matmul precision '" + precision + "' (choose default, high or highest)");
}

}  // namespace tpusim
