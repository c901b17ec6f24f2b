// The lowering's shared machinery (internal to frontend/lower): HBM and VMEM
// buffers, DMA loads and stores with the dependencies they imply, and the
// per-op lowerings, split over lower.cpp (buffers, dispatch),
// lower_gemm.cpp (MXU work) and lower_vector.cpp (vector unit and gathers).
//
// Dependencies follow byte ranges of the HBM buffers: a load waits for the
// stores that wrote the bytes it reads (directly, or through an earlier load of
// the same bytes that it already waits for), a store for the loads that read the
// bytes it overwrites and for the stores that wrote them before. Within an op,
// streamed tiles are double-buffered in VMEM: tile t's loads wait until tile
// t-2 has been computed, and its compute until tile t-2 has been stored.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "frontend/ir/graph.hpp"
#include "frontend/lower/access_list.hpp"
#include "frontend/lower/lower.hpp"
#include "frontend/lower/tiling.hpp"
#include "frontend/passes/memory_plan.hpp"
#include "sim/common/params.hpp"
#include "traces/program.pb.h"

namespace tpusim::lowering {

// [begin, end) along one dimension of a tile.
struct Span {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
};

// Where a transfer's bytes lie in its HBM buffer, relative to the buffer's start (the
// DmaTransfer descriptor less the buffer's offset): `rows` rows of `row_bytes`, row r at
// offset + r * row_stride. One row is a contiguous transfer.
struct HbmLayout {
  uint64_t offset = 0;
  uint64_t rows = 1;
  uint64_t row_bytes = 0;
  uint64_t row_stride = 0;
  uint64_t bytes() const { return rows * row_bytes; }
  static HbmLayout contiguous(uint64_t offset, uint64_t bytes) { return {offset, 1, bytes, bytes}; }
};

// `bytes` of a `total`-byte tensor from `begin` (the start of the byte range the tile reads),
// pulled back so that they end inside the tensor.
HbmLayout contiguousAt(uint64_t begin, uint64_t bytes, uint64_t total);
// A tile's `bytes` of a tensor it reads from anywhere (a transpose, a slice): placed
// contiguously where part `part` of `whole` equal parts begins.
HbmLayout shareOf(uint64_t total, uint64_t bytes, Span part, uint64_t whole);
// `rows` rows of `row_bytes` at addresses the data decides (a gather's table rows): spread
// evenly over the `total` bytes, the first at 0 and the last ending at the end.
HbmLayout spreadRows(uint64_t total, uint64_t rows, uint64_t row_bytes);

std::vector<Span> splitEvenly(Span whole, uint64_t parts);
std::vector<Span> tilesOf(Span whole, uint64_t tile);
std::string mib(uint64_t bytes);
// prefix followed by number (out of line: GCC 12 warns falsely on an inlined "literal" + std::string).
std::string numbered(const char* prefix, uint64_t number);
// bytes * part / whole without overflow, rounded up so that no tile moves zero bytes of a non-empty operand.
uint64_t fractionOf(uint64_t bytes, uint64_t part, uint64_t whole);
program::DType toProgramDType(DType dtype);
program::Phase toProgramPhase(ir::Phase phase);
// Adds the distinct deps in increasing order (the "none" marker skipped).
void addDeps(program::Instruction& ins, std::vector<uint32_t> deps);

class Lowerer {
 public:
  Lowerer(const ir::Graph& graph, const MemoryPlan& plan, const config::HardwareConfig& hw, const LowerOptions& options,
          program::ChipProgram& chip);
  void run();

 private:
  struct Hazards {
    AccessList writers;  // the stores whose writes are the buffer's current contents
    AccessList readers;  // the loads that read it since
  };

  // ---- lower.cpp: buffers, instructions, transfers
  void createHbmBuffers();
  void lowerOp(const ir::Op& op, const std::vector<const ir::Op*>& fused);
  // A reduction's prologue chain (reductionPrologues) ending in `tensor`: appends what the
  // chain loads to `inputs` (each once) and its vector ops per element to `ops`.
  void addPrologue(int tensor, std::vector<int>& inputs, uint32_t& ops, std::vector<int>& computed) const;
  uint32_t hbmOf(int tensor) const { return m_hbm_buffer[static_cast<size_t>(tensor)]; }
  ByteRange whole(int tensor) const { return {0, m_graph.tensor(tensor).bytes()}; }
  // Bytes [block(b) * unit, block(e) * unit) of `total`, for the rows [b, e) of `extent` rows
  // laid out in contiguous blocks of `granule` rows (rounded outwards to whole blocks).
  static ByteRange rowRange(uint64_t total, uint64_t extent, uint64_t granule, Span rows);
  uint32_t addVmem(const ir::Op& op, uint32_t core, const std::string& what, DType dtype, uint64_t bytes);
  program::Instruction& newInstruction(const ir::Op& op, const std::string& part, program::Unit unit, uint32_t core,
                                       uint32_t unit_index);
  // A DMA from HBM into `vmem` (engine 0): the bytes of `hbm` that `layout` places, reading
  // `range` for the dependencies (a range that covers the layout's bytes).
  uint32_t load(const ir::Op& op, uint32_t core, const std::string& part, uint32_t hbm, ByteRange range,
                const HbmLayout& layout, uint32_t vmem, const std::vector<uint32_t>& deps);
  uint32_t loadTensor(const ir::Op& op, uint32_t core, const std::string& part, int tensor, ByteRange range,
                      const HbmLayout& layout, uint32_t vmem, const std::vector<uint32_t>& deps) {
    return load(op, core, part, hbmOf(tensor), range, layout, vmem, deps);
  }
  // A load of `bytes` from where `range` begins.
  uint32_t loadTensor(const ir::Op& op, uint32_t core, const std::string& part, int tensor, ByteRange range,
                      uint64_t bytes, uint32_t vmem, const std::vector<uint32_t>& deps) {
    return loadTensor(op, core, part, tensor, range, contiguousAt(range.begin, bytes, m_graph.tensor(tensor).bytes()),
                      vmem, deps);
  }
  // A DMA from `vmem` into HBM (the last engine); the output's writes are recorded by finish().
  uint32_t store(const ir::Op& op, uint32_t core, const std::string& part, uint32_t hbm, ByteRange range,
                 const HbmLayout& layout, uint32_t vmem, const std::vector<uint32_t>& deps);
  uint32_t storeOutput(const ir::Op& op, uint32_t core, const std::string& part, ByteRange range,
                       const HbmLayout& layout, uint32_t vmem, const std::vector<uint32_t>& deps) {
    return store(op, core, part, hbmOf(op.outputs[0]), range, layout, vmem, deps);
  }
  // A store of `bytes` to where `range` begins.
  uint32_t storeOutput(const ir::Op& op, uint32_t core, const std::string& part, ByteRange range, uint64_t bytes,
                       uint32_t vmem, const std::vector<uint32_t>& deps) {
    return storeOutput(op, core, part, range, contiguousAt(range.begin, bytes, m_graph.tensor(op.outputs[0]).bytes()),
                       vmem, deps);
  }
  uint32_t vectorInstruction(const ir::Op& op, const std::string& part, uint32_t core, program::VectorKind kind,
                             uint64_t elements, uint32_t ops_per_element, DType dtype,
                             const std::vector<uint32_t>& reads, uint32_t write, uint64_t bytes,
                             std::vector<uint32_t> deps);
  // The op's output now holds what `stores` wrote.
  void finish(const ir::Op& op, std::vector<Access> stores);
  void recordLowering(const ir::Op& op, const std::string& tiling, uint64_t tiles, uint64_t vmem_bytes);
  uint64_t vmemBytes() const;
  uint64_t streamTileBytes() const;  // vmem.stream_tile_kib
  // Scratch HBM for per-core partial results; one region shared by all ops.
  uint32_t scratchBuffer(uint64_t bytes);
  // Core 0 loads the `count` partial results of op's output, one after another in `scratch`
  // from `offset` (written by the `partials` stores), adds them up and stores the output.
  Access addPartialSums(const ir::Op& op, uint32_t scratch, uint64_t offset, uint64_t count,
                        const std::vector<uint32_t>& partials);

  // ---- lower_fused.cpp: elementwise ops fused behind a producer (frontend/passes/fusion.hpp)
  struct Fused {
    std::vector<const ir::Op*> ops;
    uint32_t core = 0;
    ir::Shape shape;                                        // of every op's output
    std::map<int, std::pair<uint32_t, uint32_t>> resident;  // tensor -> VMEM buffer, its load
    std::map<int, std::array<uint32_t, 2>> slots;           // tiled tensor -> two VMEM buffers
    std::vector<std::vector<Access>> stores;                // per op
    std::vector<std::vector<uint32_t>> done;                // per tile
    // Per reduction in the group (by op index): its accumulator on this core, and the
    // instruction that last added a tile into it.
    std::map<size_t, std::pair<uint32_t, uint32_t>> accumulators;
  };
  struct FusedFootprint {
    double bytes_per_element = 0;  // of the group's output shape: tiles of inputs and outputs held in VMEM
    uint64_t resident = 0;         // inputs of other shapes, loaded whole once per core
  };
  FusedFootprint fusedFootprint(const std::vector<const ir::Op*>& ops, int leader_out) const;
  // Emits one tile of the group: each op on the vector unit, reading the leader's tile
  // (`leader_buffer`, ready after `leader_deps`), earlier ops' tiles and its own inputs'
  // tiles (`part_size` of `whole_size`, at the bytes `range` gives for the dependencies and
  // where `layout` places them), and storing what is
  // read outside the group. Returns the instructions after which the tile's VMEM is free.
  std::vector<uint32_t> emitFusedTile(Fused& fused, const std::string& part, uint64_t part_size, uint64_t whole_size,
                                      const std::function<ByteRange(int)>& range,
                                      const std::function<HbmLayout(int)>& layout, int leader_out,
                                      uint32_t leader_buffer, const std::vector<uint32_t>& leader_deps);
  void finishFused(const Fused& fused, const std::string& tiling, uint64_t tiles, uint64_t vmem_bytes);
  // A reduction run inside a group (multi-output fusion, frontend/passes/fusion.cpp): one tile
  // added into its accumulator; at the end of a core, the accumulator stored to scratch HBM;
  // at the end of the group, core 0 adds the cores' partial results up and stores them.
  void accumulateFusedTile(Fused& fused, size_t index, const std::string& part, uint64_t part_size, uint64_t whole_size,
                           uint32_t tile_buffer, const std::vector<uint32_t>& tile_deps, std::vector<uint32_t>& done);
  void storeFusedPartials(const Fused& fused);
  struct FusedPartials {
    uint64_t offset = 0;           // of core 0's partial result in scratch HBM
    std::vector<uint32_t> stores;  // per core
  };
  std::map<int, FusedPartials> m_fused_partials;  // per reduction output, while its group lowers
  uint64_t m_fused_scratch_end = 0;               // scratch bytes the current group's partials take
  void lowerFusedVector(const std::vector<const ir::Op*>& ops);

  // ---- lower_gemm.cpp
  void lowerMatMul(const ir::Op& op, const std::vector<const ir::Op*>& epilogue);
  void lowerConv(const ir::Op& op, const std::vector<const ir::Op*>& epilogue);
  // Records the op's lowering and its (and its epilogue's) writes.
  void finishGemm(const ir::Op& op, const std::vector<const ir::Op*>& epilogue, std::vector<Access> stores,
                  std::vector<std::vector<Access>> epilogue_stores, const std::string& tiling, uint64_t tiles,
                  uint64_t vmem);
  struct GemmOperand;
  struct GemmJob;
  void emitGemm(const GemmJob& job, uint32_t core, std::vector<Access>& stores, uint64_t& tiles, uint64_t& vmem,
                std::string& tiling);

  // ---- lower_collective.cpp: collectives across replicas, on the ICI
  void lowerCollective(const ir::Op& op);
  // The adds of the collectives whose output `op` (or a fused member) reads, or of all
  // pending ones: emitted just before their first reader, not with the collective, so
  // that they do not hold the in-order VPU queue while the backward pass could run.
  void emitPendingReductions(const ir::Op* op, const std::vector<const ir::Op*>& fused);
  struct PendingReduction {
    const ir::Op* op;
    uint32_t collective;  // the ICI instruction
    uint64_t elements;    // this chip adds
  };
  std::vector<PendingReduction> m_pending_reductions;
  // The all-reduces gathered into the next collective, and their bytes.
  void emitBucket();
  std::vector<const ir::Op*> m_bucket;
  uint64_t m_bucket_bytes = 0;

  // ---- lower_vector.cpp
  // `extra_ops`: ALU operations per element of a reduction prologue computed in the op.
  void lowerVector(const ir::Op& op, uint32_t extra_ops = 0);
  // Whether `tensor` is in a convolution's layout, XLA's for TPU: the feature dimension minor
  // (on the lanes), the spatial ones major. A tensor a convolution makes, or an elementwise op
  // of one, is; a graph input in NCHW is not.
  bool inConvolutionLayout(int tensor) const;
  void lowerAccumulating(const ir::Op& op, int main_input, uint64_t rows, uint64_t elements, uint32_t ops_per_element);
  void lowerGather(const ir::Op& op);
  void lowerGatherGrad(const ir::Op& op);

  const ir::Graph& m_graph;
  const config::HardwareConfig& m_hw;
  uint64_t m_f32_passes;               // bf16 passes of an f32 product (LowerOptions::matmul_precision)
  bool m_tile_for_cycles;              // LowerOptions::tiling_objective
  std::optional<Topology> m_topology;  // LowerOptions::topology
  uint64_t m_bucket_limit;             // LowerOptions::all_reduce_bucket_bytes
  GemmCostModel costModel(DType input_dtype) const;
  // Vector ALU operations per element to convert `dtype` to or from float32 as it is
  // loaded or stored, where the vector unit has no ALU of that type (vpu.*_convert_ops).
  // Vector ALU operations per element converting a loaded element of `dtype` to f32 (unpack),
  // or an f32 result to `dtype` before a store (pack), where the vector unit lacks its ALU.
  uint32_t unpackOps(DType dtype) const;
  uint32_t packOps(DType dtype) const;
  program::ChipProgram& m_chip;
  const MemoryPlan& m_plan;
  std::vector<std::string> m_layers;    // per op
  std::vector<bool> m_on_chip;          // per tensor: fused away, never in HBM
  std::vector<int> m_cast_source;       // per tensor: what a cast fused into its readers reads, or -1
  std::vector<size_t> m_op_writing;     // per tensor: the index of the op that writes it
  std::vector<bool> m_prologue;         // per tensor: made inside the reduction that reads it
  std::vector<int> m_operand_prologue;  // per tensor: what an MXU reader loads instead (operandPrologues), or -1
  // The tensor an operand's tiles load: the cast's input where the cast is fused into its
  // reader, the streamed operand of an elementwise op fused into an MXU reader's loads.
  int loadedTensor(int tensor) const {
    const int source = m_cast_source[static_cast<size_t>(tensor)];
    if (source >= 0) return source;
    const int streamed = m_operand_prologue[static_cast<size_t>(tensor)];
    return streamed >= 0 ? streamed : tensor;
  }
  // `op` reading what its loads read (loadedTensor of each input): same shapes, the stored dtypes.
  ir::Op sourced(const ir::Op& op) const {
    ir::Op copy = op;
    for (int& input : copy.inputs) input = loadedTensor(input);
    return copy;
  }
  std::vector<uint32_t> m_hbm_buffer;       // per tensor
  std::vector<Hazards> m_hazards;           // per buffer (HBM ones used)
  std::vector<uint32_t> m_last_load;        // per core: the latest load emitted, or UINT32_MAX
  std::vector<uint32_t> m_loads_before_op;  // m_last_load when the current op began
  uint32_t m_kernel = 0;                    // Instruction.kernel of what is being lowered
  uint32_t m_scratch = UINT32_MAX;
  uint64_t m_scratch_bytes = 0;
  // What each load read, for writersWaitedFor: its buffer, its bytes and the version of the
  // buffer's writers then.
  struct LoadRead {
    uint32_t hbm;
    ByteRange range;
    uint64_t writers_version;
  };
  std::unordered_map<uint32_t, LoadRead> m_load_reads;  // per load instruction
  // Whether `deps`, or an instruction each of them waits for directly, is a load of bytes of
  // `hbm` that cover `range` whose writers are unchanged since: a load that waits for `deps`
  // then already follows every store that wrote the bytes.
  bool writersWaitedFor(uint32_t hbm, ByteRange range, const std::vector<uint32_t>& deps) const;
};

}  // namespace tpusim::lowering
